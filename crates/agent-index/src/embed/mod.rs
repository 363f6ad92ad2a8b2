//! Sentence embeddings: by default with fastembed on ONNX Runtime, both from
//! `models/`, on this machine; or from a server ([`remote`]).
//!
//! The ONNX Runtime library is loaded from the models folder at run time
//! (`ort` load-dynamic): nothing is downloaded, and a missing or too old
//! runtime is an error that names the fix instead of a panic.
//!
//! An index records which embedder made its vectors ([`Identity`]: model,
//! width, server): vectors of two models cannot be compared, so a writer
//! asked for another model refuses to open (`--rebuild` starts over), and
//! readers embed queries with the recorded one ([`Choice::matching`]), on the
//! recorded server for a remote index. The table's vector width is the
//! model's (384 for MiniLM).
//!
//! Texts go to ONNX Runtime a few at a time: its arena keeps the largest
//! batch's tensors, so the batch size sets peak RSS (1.4 GB at 32, 0.5 GB at
//! 4; BENCHMARKS.md). `--threads` caps the embedder.

pub mod remote;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};
use serde::{Deserialize, Serialize};

use agent_base::paths;
pub use remote::RemoteEmbedder;

/// all-MiniLM-L6-v2 output size (the default embedder's).
pub const DIM: usize = 384;
/// The default embedder's name, as recorded in an index.
pub const LOCAL_MODEL: &str = "all-MiniLM-L6-v2 (int8, on this machine)";

/// Which model made an index's vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub model: String,
    pub dim: usize,
    /// The server's endpoint, for vectors made by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl Identity {
    pub fn local() -> Self {
        Self {
            model: LOCAL_MODEL.into(),
            dim: DIM,
            server: None,
        }
    }

    /// Whether vectors of `other` can sit beside these (the server may move).
    pub fn same_model(&self, other: &Identity) -> bool {
        self.model == other.model
            && self.dim == other.dim
            && self.server.is_some() == other.server.is_some()
    }

    /// `nomic-embed (768-d) at http://gpu:8080/v1/embeddings`.
    pub fn describe(&self) -> String {
        match &self.server {
            Some(server) => format!("{} ({}-d) at {server}", self.model, self.dim),
            None => format!("{} ({}-d)", self.model, self.dim),
        }
    }
}

/// The embedder asked for when an index is opened.
#[derive(Debug, Clone, Default)]
pub enum Choice {
    /// The one the index was made with (the local default for a new one).
    #[default]
    AsRecorded,
    /// A server speaking OpenAI's embeddings API (`--embed-server`).
    Server {
        url: String,
        model: Option<String>,
        api_key: Option<String>,
    },
}
impl Choice {
    /// The embedder whose vectors sit beside `identity`'s: its server (at
    /// `AGENT_EMBED_SERVER` if it moved), or the local model.
    pub fn matching(identity: &Identity) -> Self {
        match &identity.server {
            Some(server) => Choice::Server {
                url: std::env::var("AGENT_EMBED_SERVER").unwrap_or_else(|_| server.clone()),
                model: Some(identity.model.clone()),
                api_key: std::env::var("AGENT_EMBED_API_KEY").ok(),
            },
            None => Choice::AsRecorded,
        }
    }
}

/// Longest input in tokens; MiniLM was trained with 256.
pub const MAX_TOKENS: usize = 256;
/// Texts per ONNX Runtime call. Small: ONNX Runtime's arena keeps the
/// largest batch's tensors (attention grows with batch × length²), and
/// batches are length-sorted, so little padding is saved by size. On two
/// cores, indexing 2,163 chunks: 32 → 1,394 MB peak RSS, 40.7 s; 4 → 501 MB,
/// 32.2 s; 1 → 370 MB, 31.1 s. 4 keeps some work per call for more cores.
const BATCH: usize = 4;

pub struct Embedder {
    backend: Backend,
    /// The local model's tokenizer without truncation: chunk sizes are
    /// counted with it whoever embeds.
    counter: tokenizers::Tokenizer,
}

enum Backend {
    Local(LocalModel),
    Remote(RemoteEmbedder),
}

/// The local model, its ONNX Runtime session made when first asked to
/// embed: chunking needs only the tokenizer, and the session (weights and
/// buffers, about 250 MB) can be let go of before a vector index build.
struct LocalModel {
    model_dir: PathBuf,
    ort_lib: PathBuf,
    threads: usize,
    session: Option<Box<TextEmbedding>>,
}

impl LocalModel {
    fn session(&mut self) -> Result<&mut TextEmbedding> {
        let session = match self.session.take() {
            Some(session) => session,
            None => Box::new(load_session(&self.model_dir, &self.ort_lib, self.threads)?),
        };
        Ok(self.session.insert(session))
    }
}

fn read_model_file(model_dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = model_dir.join(name);
    std::fs::read(&path).with_context(|| {
        format!(
            "embedder file missing: {}\n  fix: {}",
            path.display(),
            agent_base::models::fetch_hint()
        )
    })
}

fn load_session(model_dir: &Path, ort_lib: &Path, threads: usize) -> Result<TextEmbedding> {
    let read = |name: &str| read_model_file(model_dir, name);
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
    TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
        anyhow!(
            "cannot load the embedding model: {e}\n  fix: {}",
            agent_base::models::fetch_hint()
        )
    })
}

/// The tokenizer at `path`, counting every token (no truncation, no
/// padding).
fn read_tokenizer(path: &Path) -> Result<tokenizers::Tokenizer> {
    let t = tokenizers::Tokenizer::from_file(path).map_err(|e| {
        anyhow!(
            "cannot read {} ({e})\n  fix: {}",
            path.display(),
            agent_base::models::fetch_hint()
        )
    })?;
    untruncated(t)
}

/// A tokenizer that counts every token: no truncation, no padding.
fn untruncated(mut t: tokenizers::Tokenizer) -> Result<tokenizers::Tokenizer> {
    t.with_truncation(None)
        .map_err(|e| anyhow!("tokenizer: {e}"))?;
    t.with_padding(None);
    Ok(t)
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
            "cannot load ONNX Runtime from {}: {e}\n  fix: {}",
            lib.display(),
            agent_base::models::fetch_hint()
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

    /// The local model in `model_dir`, run by the ONNX Runtime at
    /// `ort_lib`: the files are checked here, the session is made at the
    /// first [`Embedder::embed`].
    pub fn load(model_dir: &Path, ort_lib: &Path, threads: usize) -> Result<Self> {
        if !ort_lib.is_file() {
            anyhow::bail!(
                "ONNX Runtime not found at {}\n  fix: {}",
                ort_lib.display(),
                agent_base::models::fetch_hint()
            );
        }
        for name in [
            "model.onnx",
            "config.json",
            "special_tokens_map.json",
            "tokenizer_config.json",
        ] {
            if !model_dir.join(name).is_file() {
                read_model_file(model_dir, name)?;
            }
        }
        let counter = read_tokenizer(&model_dir.join("tokenizer.json"))?;
        Ok(Self {
            backend: Backend::Local(LocalModel {
                model_dir: model_dir.to_path_buf(),
                ort_lib: ort_lib.to_path_buf(),
                threads,
                session: None,
            }),
            counter,
        })
    }

    /// Lets go of the local model's session (it is made again when next
    /// needed) and hands the memory back to the OS; a server's client is
    /// kept.
    pub fn release_model(&mut self) {
        if let Backend::Local(local) = &mut self.backend {
            if local.session.take().is_some() {
                agent_base::alloc::return_freed_memory();
            }
        }
    }

    /// An embedder that sends texts to `server`; chunks are still measured
    /// with the local tokenizer from the models folder.
    pub fn remote(server: RemoteEmbedder) -> Result<Self> {
        let counter = read_tokenizer(&paths::models_dir().join("minilm").join("tokenizer.json"))?;
        Ok(Self {
            backend: Backend::Remote(server),
            counter,
        })
    }

    /// Connects to an embeddings server ([`RemoteEmbedder::connect`]).
    pub fn from_server(url: &str, model: Option<&str>, api_key: Option<String>) -> Result<Self> {
        Self::remote(RemoteEmbedder::connect(url, model, api_key)?)
    }

    /// Which model this is, as an index records it.
    pub fn identity(&self) -> Identity {
        match &self.backend {
            Backend::Local(_) => Identity::local(),
            Backend::Remote(r) => Identity {
                model: r.model().to_string(),
                dim: r.dim(),
                server: Some(r.endpoint().to_string()),
            },
        }
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
        let model = match &mut self.backend {
            Backend::Local(local) => local.session()?,
            Backend::Remote(server) => return server.embed(texts),
        };
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = model
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
