//! The in-process llama.cpp engine.
//!
//! One model and one context live for the whole process. The context's KV
//! cache is kept between calls: each request's prompt is compared token by
//! token with what the cache already holds, the divergent tail is dropped,
//! and only the new suffix is evaluated. Agent turns share a long, byte-stable
//! system prompt, so a second turn costs a fraction of the first.

use std::mem::ManuallyDrop;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::LlamaBackendDeviceType;

use crate::gguf;
use crate::offload::{self, Device, DeviceKind, GpuLayers, ModelShape, OffloadRequest, Plan};
use agent_llm::{
    template, Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Message,
    Placement, Provider, StopScanner,
};

/// How to load the model, where, and with how large a context.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model_path: PathBuf,
    /// Context window in tokens; default: the model's training context,
    /// fitted to the memory of the device (see `offload`).
    pub ctx_size: Option<u32>,
    /// CPU threads; default: all available cores.
    pub threads: Option<i32>,
    /// Tokens evaluated per llama.cpp batch during prefill.
    pub batch_size: u32,
    /// Layers on the GPU (`--gpu-layers`).
    pub gpu_layers: GpuLayers,
    /// ggml device index of the GPU (`--gpu-device`).
    pub gpu_device: Option<usize>,
}

impl EngineConfig {
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            ctx_size: None,
            threads: None,
            batch_size: 512,
            gpu_layers: GpuLayers::Auto,
            gpu_device: None,
        }
    }

    fn offload_request(&self) -> OffloadRequest {
        OffloadRequest {
            layers: self.gpu_layers,
            device: self.gpu_device,
            ctx_size: self.ctx_size,
        }
    }
}

/// The llama.cpp backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp prints a lot to stderr; route it into `tracing`, where
            // the CLI's filter keeps it quiet unless `-vv` is given.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Backend(e.clone()))
}

/// llama.cpp's build and CPU feature summary (SIMD flags, backends).
pub fn system_info() -> String {
    // SAFETY: returns a pointer to a static, NUL-terminated buffer.
    unsafe { std::ffi::CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) }
        .to_string_lossy()
        .trim()
        .to_string()
}

/// The compute devices llama.cpp's backends see, the CPU included.
pub fn devices() -> Result<Vec<Device>, LlmError> {
    backend()?;
    Ok(llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| Device {
            index: d.index,
            name: d.name,
            description: d.description,
            backend: d.backend,
            kind: match d.device_type {
                LlamaBackendDeviceType::Cpu => DeviceKind::Cpu,
                LlamaBackendDeviceType::Gpu => DeviceKind::Gpu,
                LlamaBackendDeviceType::IntegratedGpu => DeviceKind::IntegratedGpu,
                LlamaBackendDeviceType::Accelerator => DeviceKind::Accelerator,
                LlamaBackendDeviceType::Unknown => DeviceKind::Unknown,
            },
            memory_free: d.memory_free as u64,
            memory_total: d.memory_total as u64,
        })
        .collect())
}

/// The model's shape as the offload planner needs it, from its GGUF header.
pub fn model_shape(info: &gguf::GgufInfo) -> ModelShape {
    // Headers without the attention keys (rare, old converters) are planned
    // as a 7B-like model: 32 layers, 128 KiB of cache per token.
    let layers = info.layers.unwrap_or(32).clamp(1, 4096) as u32;
    ModelShape {
        layers,
        weights_bytes: info.file_size,
        ctx_train: info
            .context_length
            .unwrap_or(4096)
            .clamp(64, u64::from(u32::MAX)) as u32,
        kv_bytes_per_token: info.kv_bytes_per_token.unwrap_or(u64::from(layers) * 4096),
    }
}

/// Plans where the model runs on `devices` (see `offload::plan`) without
/// loading it: what `LlamaEngine::load` starts from and `agent doctor` reports.
pub fn plan(config: &EngineConfig, devices: &[Device]) -> Result<(Plan, ModelShape), LlmError> {
    let shape = model_shape(&inspect(&config.model_path)?);
    let plan = offload::plan(
        &config.offload_request(),
        devices,
        &shape,
        &offload::compiled_backends(),
    )
    .map_err(|e| LlmError::Offload(e.to_string()))?;
    Ok((plan, shape))
}

fn inspect(path: &Path) -> Result<gguf::GgufInfo, LlmError> {
    let shown = path.display().to_string();
    if !path.is_file() {
        return Err(LlmError::ModelNotFound { path: shown });
    }
    gguf::inspect(path).map_err(|e| LlmError::InvalidModel {
        path: shown,
        reason: e.to_string(),
    })
}

pub fn default_threads() -> i32 {
    std::thread::available_parallelism().map_or(4, |n| n.get() as i32)
}

pub struct LlamaEngine {
    // Field order matters only for clarity: Drop frees `ctx` before `model`.
    ctx: ManuallyDrop<LlamaContext<'static>>,
    model: &'static LlamaModel,
    template: Option<LlamaChatTemplate>,
    /// Texts of the control tokens (`<|im_end|>`, ...). Rendered prompts are
    /// tokenized with special-token parsing (the template's markup needs it),
    /// so these are defused inside message contents: a file that contains
    /// `<|im_start|>system` must stay text, not become a turn.
    specials: Vec<String>,
    model_path: PathBuf,
    /// Tokens whose keys and values are in the context's KV cache (sequence 0).
    cached: Vec<LlamaToken>,
    n_ctx: usize,
    n_batch: usize,
    threads: i32,
    plan: Plan,
    /// How it was loaded, and the CPU plan to reload with if the GPU fails
    /// mid-session (None once on the CPU).
    config: EngineConfig,
    cpu_fallback: Option<Plan>,
}

impl Drop for LlamaEngine {
    fn drop(&mut self) {
        // SAFETY: the context borrows the model, so it goes first; the model
        // was leaked from a Box in `load` and is referenced by nothing else.
        unsafe {
            ManuallyDrop::drop(&mut self.ctx);
            drop(Box::from_raw(
                self.model as *const LlamaModel as *mut LlamaModel,
            ));
        }
    }
}

impl LlamaEngine {
    /// Validates and loads a GGUF model, places it as planned (see
    /// `offload`) and creates its context. When the device runs out of
    /// memory, it retries with half the layers and then on the CPU, with one
    /// warning.
    pub fn load(config: &EngineConfig) -> Result<Self, LlmError> {
        let backend = backend()?;
        let devices = devices()?;
        // Validates the model file (GGUF header) before llama.cpp sees it.
        let (first, shape) = plan(config, &devices)?;
        let request = config.offload_request();
        let cpu_by_default = first.gpu_layers == 0 && request.layers != GpuLayers::Count(0);
        if let (true, Some(note)) = (cpu_by_default, &first.note) {
            // Said once per load where a GPU was asked for or built in; a
            // CPU-only build with the default `auto` stays quiet (doctor says it).
            if request.layers != GpuLayers::Auto || !offload::compiled_backends().is_empty() {
                tracing::warn!("running the model on the CPU: {note}");
            }
        }
        let mut plans = vec![first.clone()];
        plans.extend(offload::fallbacks(&first, &request, &devices, &shape));
        let cpu_fallback = plans.last().filter(|p| p.gpu_layers == 0).cloned();
        let (mut engine, _, warning) = offload::load_first(plans, |plan| {
            Self::load_placed(backend, config, plan.clone())
        })?;
        if let Some(warning) = warning {
            tracing::warn!("{warning}");
        }
        engine.cpu_fallback = cpu_fallback.filter(|_| engine.plan.gpu_layers > 0);
        Ok(engine)
    }

    fn load_placed(
        backend: &'static LlamaBackend,
        config: &EngineConfig,
        plan: Plan,
    ) -> Result<Self, LlmError> {
        let path = &config.model_path;
        let shown = path.display().to_string();
        // An empty device list keeps llama.cpp off every GPU (its default is
        // all of them, for weights and for compute).
        let gpus: Vec<usize> = plan.device.iter().map(|d| d.index).collect();
        let params = LlamaModelParams::default()
            .with_n_gpu_layers(plan.gpu_layers)
            .with_devices(&gpus)
            .map_err(|e| LlmError::Offload(format!("{e}")))?;
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
            if plan.gpu_layers > 0 {
                LlmError::Backend(format!(
                    "loading {} layers on the GPU failed ({e})",
                    plan.gpu_layers
                ))
            } else {
                LlmError::InvalidModel {
                    path: shown.clone(),
                    reason: format!("llama.cpp could not load it ({e})"),
                }
            }
        })?;
        // The context borrows the model for as long as the engine lives; the
        // engine owns both and frees them in order (see Drop).
        let model: &'static LlamaModel = Box::leak(Box::new(model));

        let n_ctx = plan.n_ctx.max(64);
        let threads = config.threads.unwrap_or_else(default_threads).max(1);
        let n_batch = config.batch_size.clamp(8, n_ctx);
        let on_gpu = plan.gpu_layers > 0;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_offload_kqv(on_gpu)
            .with_op_offload(on_gpu);
        let ctx = match model.new_context(backend, params) {
            Ok(ctx) => ctx,
            Err(e) => {
                // SAFETY: nothing borrows the model yet.
                unsafe { drop(Box::from_raw(model as *const LlamaModel as *mut LlamaModel)) };
                return Err(LlmError::Backend(format!(
                    "cannot create a {n_ctx}-token context: {e}"
                )));
            }
        };
        let template = model.chat_template(None).ok();
        let vocab = model.vocab();
        let mut specials: Vec<String> = vocab
            .tokens()
            .filter(|&t| vocab.is_control(t))
            .filter_map(|t| vocab.text(t).map(|c| c.to_string_lossy().into_owned()))
            .filter(|text| text.chars().count() >= 2)
            .collect();
        specials.sort();
        specials.dedup();
        tracing::info!("model placed: {}", plan.summary());
        Ok(Self {
            ctx: ManuallyDrop::new(ctx),
            model,
            template,
            specials,
            model_path: path.clone(),
            cached: Vec::new(),
            n_ctx: n_ctx as usize,
            n_batch: n_batch as usize,
            threads,
            plan,
            config: config.clone(),
            cpu_fallback: None,
        })
    }

    /// Replaces this engine with one on the CPU, after the GPU failed.
    fn fall_back_to_cpu(&mut self, failure: &str) -> Result<(), LlmError> {
        let Some(cpu) = self.cpu_fallback.take() else {
            return Err(LlmError::Backend(failure.to_string()));
        };
        tracing::warn!(
            "the model failed on {} ({failure}); reloading it on the CPU",
            self.plan.summary()
        );
        let fresh = Self::load_placed(backend()?, &self.config, cpu)?;
        *self = fresh;
        Ok(())
    }

    /// Where the model runs and with how large a context.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn model_path(&self) -> &Path {
        &self.model_path
    }

    pub fn threads(&self) -> i32 {
        self.threads
    }

    /// Tokens currently held in the KV cache.
    pub fn cached_tokens(&self) -> usize {
        self.cached.len()
    }

    /// Empties the KV cache, as if the context were new.
    pub fn clear_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    /// The prompt text for `messages`: the model's own chat template when
    /// llama.cpp can apply it, ChatML otherwise.
    pub fn render(&self, messages: &[Message]) -> String {
        if let Some(tmpl) = &self.template {
            let chat: Result<Vec<_>, _> = messages
                .iter()
                .map(|m| LlamaChatMessage::new(m.role.as_str().into(), self.defuse(&m.content)))
                .collect();
            match chat.map(|chat| self.model.apply_chat_template(tmpl, &chat, true)) {
                Ok(Ok(text)) => return text,
                Ok(Err(e)) => tracing::debug!("model chat template not usable ({e}); using ChatML"),
                Err(e) => tracing::debug!("message not representable ({e}); using ChatML"),
            }
        }
        let defused: Vec<Message> = messages
            .iter()
            .map(|m| Message::new(m.role, self.defuse(&m.content)))
            .collect();
        template::chatml(&defused, true)
    }

    /// Message content with control-token texts broken by a zero-width space
    /// (and NULs dropped), so tokenizing it never yields a control token.
    fn defuse(&self, content: &str) -> String {
        let mut out = content.replace('\0', "");
        for special in &self.specials {
            if out.contains(special.as_str()) {
                let mut chars = special.chars();
                let first = chars.next().expect("at least two chars");
                out = out.replace(
                    special.as_str(),
                    &format!("{first}\u{200B}{}", chars.as_str()),
                );
            }
        }
        out
    }

    /// Tokenizes a rendered prompt (special tokens such as `<|im_start|>` are parsed).
    pub fn tokenize_prompt(&self, text: &str) -> Vec<LlamaToken> {
        self.model.vocab().tokenize(text.as_bytes(), true, true)
    }

    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), LlmError> {
        self.ctx.decode(batch).map_err(|e| {
            // The cache may now hold a partial batch; forget it rather than
            // trust it on the next call.
            self.clear_cache();
            LlmError::Backend(format!("decode failed: {e}"))
        })
    }

    fn sampler(&self, request: &CompletionRequest) -> Result<LlamaSampler, LlmError> {
        let mut chain = Vec::new();
        if let Some(g) = &request.grammar {
            chain.push(
                LlamaSampler::grammar(self.model, &g.gbnf, &g.root).map_err(|e| {
                    LlmError::Grammar(format!("llama.cpp rejected the grammar ({e})"))
                })?,
            );
        }
        let s = request.sampling;
        if s.repeat_penalty != 1.0 {
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                64,
                s.repeat_penalty.max(0.01),
                0.0,
                0.0,
            ));
        }
        if s.is_greedy() {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_p(s.top_p.clamp(0.0, 1.0), 1));
            chain.push(LlamaSampler::temp(s.temperature));
            chain.push(LlamaSampler::dist(s.seed));
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    /// Drops the cached tokens that differ from `prompt` and returns how many
    /// are kept. At least one prompt token is always left to evaluate, since
    /// sampling needs fresh logits.
    fn reuse_prefix(&mut self, prompt: &[LlamaToken]) -> usize {
        let common = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        let keep = common.min(prompt.len().saturating_sub(1));
        if keep < self.cached.len() {
            if self
                .ctx
                .kv_cache_seq_rm(0, Some(keep as u32), None)
                .is_err()
            {
                // Some architectures (recurrent) cannot drop a tail.
                self.clear_cache();
                return 0;
            }
            self.cached.truncate(keep);
        }
        keep
    }
}

impl Provider for LlamaEngine {
    fn name(&self) -> String {
        self.model_path.file_name().map_or_else(
            || self.model_path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    fn context_size(&self) -> usize {
        self.n_ctx
    }

    fn placement(&self) -> Option<Placement> {
        Some(Placement::from(&self.plan))
    }

    fn supports_grammar(&self) -> bool {
        true
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(self
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len())
    }

    fn count_message_tokens(&self, messages: &[Message]) -> Result<usize, LlmError> {
        Ok(self.tokenize_prompt(&self.render(messages)).len())
    }

    /// Runs the request; when the GPU fails before any text was shown (a
    /// device out of memory on a long prompt, a lost device), the model is
    /// reloaded on the CPU once and the request runs again there.
    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let mut streamed = false;
        let result = self.complete_once(request, &mut |event| {
            streamed |= matches!(event, Event::Text(_));
            on_event(event)
        });
        match result {
            Err(LlmError::Backend(failure)) if !streamed && self.cpu_fallback.is_some() => {
                self.fall_back_to_cpu(&failure)?;
                self.complete_once(request, on_event)
            }
            other => other,
        }
    }
}

impl LlamaEngine {
    fn complete_once(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let prompt = self.tokenize_prompt(&self.render(&request.messages));
        let reserve = request.max_tokens.min(self.n_ctx / 4).max(1);
        if prompt.is_empty() || prompt.len() + reserve > self.n_ctx {
            return Err(LlmError::ContextOverflow {
                prompt_tokens: prompt.len(),
                n_ctx: self.n_ctx,
                reserve,
            });
        }
        let mut sampler = self.sampler(request)?;

        let reused = self.reuse_prefix(&prompt);
        let suffix = &prompt[reused..];
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut done = 0;
        let mut result = Completion {
            text: String::new(),
            finish: FinishReason::Stop,
            prompt_tokens: prompt.len(),
            reused_tokens: reused,
            prefilled_tokens: 0,
            completion_tokens: 0,
            tokens: Vec::new(),
            prefill_ms: 0.0,
            decode_ms: 0.0,
            ttft_ms: 0.0,
        };
        for chunk in suffix.chunks(self.n_batch) {
            batch.clear();
            for (i, &token) in chunk.iter().enumerate() {
                let is_last = done + i + 1 == suffix.len();
                batch
                    .add(token, (self.cached.len() + i) as i32, &[0], is_last)
                    .map_err(|e| LlmError::Backend(e.to_string()))?;
            }
            self.decode(&mut batch)?;
            self.cached.extend_from_slice(chunk);
            done += chunk.len();
            result.prefilled_tokens = done;
            if on_event(Event::Prefill {
                done,
                total: suffix.len(),
            }) == Flow::Stop
            {
                result.finish = FinishReason::Cancelled;
                result.prefill_ms = ms_since(started);
                return Ok(result);
            }
        }
        result.prefill_ms = ms_since(started);

        let decode_started = Instant::now();
        let vocab = self.model.vocab();
        let mut utf8 = Utf8Stream::default();
        let mut stops = StopScanner::new(&request.stop);
        let mut logits_at = batch.n_tokens() - 1;
        result.finish = loop {
            if result.tokens.len() >= request.max_tokens {
                break FinishReason::Length;
            }
            if self.cached.len() >= self.n_ctx {
                break FinishReason::ContextFull;
            }
            // Damaged weights compute NaN, and sampling NaN yields noise or
            // nothing: say so rather than answer with it.
            if self
                .ctx
                .get_logits_ith(logits_at)
                .iter()
                .any(|x| x.is_nan())
            {
                return Err(LlmError::InvalidModel {
                    path: self.model_path.display().to_string(),
                    reason: "it computes NaN (not-a-number) scores, so its weights are damaged"
                        .into(),
                });
            }
            // `sample` also accepts the token into the grammar; accepting it
            // again would corrupt the grammar state.
            let token = sampler.sample(&self.ctx, logits_at);
            if result.tokens.is_empty() {
                result.ttft_ms = ms_since(started);
            }
            if vocab.is_eog(token) && !request.ignore_eos {
                break FinishReason::Stop;
            }
            result.tokens.push(token.0);
            let text = utf8.push(&vocab.token_to_piece(token, false, None));
            if let Some(finish) = stops.feed(&text, on_event) {
                break finish;
            }
            batch.clear();
            batch
                .add(token, self.cached.len() as i32, &[0], true)
                .map_err(|e| LlmError::Backend(e.to_string()))?;
            self.decode(&mut batch)?;
            self.cached.push(token);
            logits_at = 0;
        };
        // An incomplete UTF-8 sequence left at the end becomes U+FFFD.
        let tail = utf8.flush();
        match result.finish {
            FinishReason::StopSequence => {}
            FinishReason::Cancelled => {
                stops.push(&tail);
            }
            _ => {
                if let Some(finish) = stops.feed(&tail, on_event) {
                    result.finish = finish;
                }
            }
        }
        stops.end(result.finish, on_event);
        result.text = stops.text().to_string();
        result.completion_tokens = result.tokens.len();
        result.decode_ms = ms_since(decode_started);
        Ok(result)
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Turns token bytes into text, holding back an incomplete UTF-8 sequence
/// (an emoji split over two tokens) until the rest arrives.
#[derive(Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let s = s.to_string();
                self.pending.clear();
                s
            }
            Err(e) if e.error_len().is_none() => {
                let valid = e.valid_up_to();
                let s = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                s
            }
            Err(_) => self.flush(),
        }
    }

    fn flush(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_joins_split_characters() {
        let mut s = Utf8Stream::default();
        let bytes = "é😀".as_bytes();
        assert_eq!(s.push(&bytes[..1]), "");
        assert_eq!(s.push(&bytes[1..4]), "é");
        assert_eq!(s.push(&bytes[4..]), "😀");
        assert_eq!(s.push(&[0xff]), "\u{fffd}");
    }
}
