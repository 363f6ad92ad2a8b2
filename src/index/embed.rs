//! Sentence embeddings with fastembed on ONNX Runtime, both from `models/`.
//!
//! The ONNX Runtime library is loaded from the models folder at run time
//! (`ort` load-dynamic): nothing is downloaded, and a missing or too old
//! runtime is an error that names the fix instead of a panic.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use crate::paths;

/// all-MiniLM-L6-v2 output size.
pub const DIM: usize = 384;
/// Longest input in tokens; MiniLM was trained with 256.
pub const MAX_TOKENS: usize = 256;
/// Texts per ONNX Runtime call. Small: ONNX Runtime's arena keeps the
/// largest batch's tensors (attention grows with batch × length²), and
/// batches are length-sorted, so little padding is saved by size. On two
/// cores, indexing 2,163 chunks: 32 → 1,394 MB peak RSS, 40.7 s; 4 → 501 MB,
/// 32.2 s; 1 → 370 MB, 31.1 s. 4 keeps some work per call for more cores.
const BATCH: usize = 4;

pub struct Embedder {
    model: TextEmbedding,
    /// The model's tokenizer without truncation, for exact counts.
    counter: tokenizers::Tokenizer,
}

/// ONNX Runtime allows one environment per process.
fn ort_environment(lib: &Path) -> Result<ort::environment::Environment> {
    static ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let builder = ort::init_from(lib).map_err(|e| e.to_string())?;
        builder
            .with_name("agent")
            .with_telemetry(false)
            .build()
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|e| {
        anyhow!(
            "cannot load ONNX Runtime from {}: {e}\n  fix: run scripts/fetch-models",
            lib.display()
        )
    })
}

/// The execution provider embeddings run on: `CUDA` when this build asks
/// for it (`--features embed-cuda`) and the loaded ONNX Runtime has it,
/// else `CPU`, with the reason.
#[cfg(not(feature = "embed-cuda"))]
pub fn execution_provider(_ort_lib: &Path) -> String {
    "CPU (a GPU needs a build with --features embed-cuda)".into()
}

#[cfg(feature = "embed-cuda")]
pub fn execution_provider(ort_lib: &Path) -> String {
    use ort::ep::ExecutionProvider;
    if let Err(e) = ort_environment(ort_lib) {
        return format!("CPU ({e})");
    }
    match ort::ep::CUDA::is_available() {
        Ok(true) => "CUDA".into(),
        Ok(false) => "CPU (this ONNX Runtime has no CUDA provider: use the library of the onnxruntime-gpu build)".into(),
        Err(e) => format!("CPU ({e})"),
    }
}

impl Embedder {
    /// Loads the default embedder from the models folder.
    pub fn load_default(threads: usize) -> Result<Self> {
        let dir = paths::models_dir();
        Self::load(
            &dir.join("minilm"),
            &dir.join(paths::ONNX_RUNTIME_LIB),
            threads,
        )
    }

    pub fn load(model_dir: &Path, ort_lib: &Path, threads: usize) -> Result<Self> {
        let read = |name: &str| {
            let path = model_dir.join(name);
            std::fs::read(&path).with_context(|| {
                format!(
                    "embedder file missing: {}\n  fix: run scripts/fetch-models",
                    path.display()
                )
            })
        };
        if !ort_lib.is_file() {
            anyhow::bail!(
                "ONNX Runtime not found at {}\n  fix: run scripts/fetch-models",
                ort_lib.display()
            );
        }
        let files = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let model =
            UserDefinedEmbeddingModel::new(read("model.onnx")?, files).with_pooling(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_environment(ort_environment(ort_lib)?)
            .with_max_length(MAX_TOKENS)
            .with_intra_threads(threads.max(1))
            // Busy-waiting threads would steal the CPU from the chunker.
            .with_session_config("session.intra_op.allow_spinning", "0");
        // ONNX Runtime falls back to the CPU by itself when the CUDA provider
        // cannot register (a CPU build of the library, no driver).
        #[cfg(feature = "embed-cuda")]
        let options = options.with_execution_providers(vec![ort::ep::CUDA::default().build()]);
        let model = TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
            anyhow!("cannot load the embedding model: {e}\n  fix: run scripts/fetch-models")
        })?;
        let mut counter = model.tokenizer.clone();
        counter
            .with_truncation(None)
            .map_err(|e| anyhow!("tokenizer: {e}"))?;
        counter.with_padding(None);
        Ok(Self { model, counter })
    }

    /// Tokens `text` takes, including the [CLS] and [SEP] markers.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.counter
            .encode_fast(text, true)
            .map_or(text.len() / 3, |e| e.len())
    }

    /// Embeds texts (L2-normalised, so cosine similarity is a dot product).
    /// Batches are formed from texts of similar length, so little compute is
    /// spent on padding; results come back in input order.
    pub fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self
                .model
                .embed(&inputs, Some(BATCH))
                .map_err(|e| anyhow!("embedding failed: {e}"))?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    pub fn embed_one(&mut self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(&[text.to_string()])?.remove(0))
    }
}
