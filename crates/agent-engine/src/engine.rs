//! The in-process llama.cpp engine.
//!
//! One model and one context live for the whole process. The context's KV
//! cache is kept between calls: each request's prompt is compared token by
//! token with what the cache already holds, the divergent tail is dropped,
//! and only the new suffix is evaluated. Agent turns share a long, byte-stable
//! system prompt, so a second turn costs a fraction of the first.
//!
//! Prompts are rendered with the model's own chat template (the GGUF's
//! `tokenizer.chat_template`, or `--chat-template-file`) by `agent_chat`
//! ([`ChatFormat`], with llama.cpp's built-in matcher and ChatML as
//! fallbacks). A turn is generated in two phases: reasoning, unconstrained
//! and sampled as the model's makers advise, closed by the engine at the
//! think budget; then the answer, under the family's call grammar (lazy:
//! from the call's opener on). The turn is then read in the family's syntax.
//!
//! - **Ownership.** `LlamaContext` borrows the model, so the engine owns both:
//!   the model boxed and leaked to `'static`, freed after the context in
//!   `Drop`. The llama.cpp backend is initialised once (a `OnceLock`); its
//!   logs go to `tracing` under the `llama-cpp-2` target, which the CLI shows
//!   only at `-vv`.
//! - **The token list matches the cache.** The engine remembers the tokens
//!   whose keys and values sit in sequence 0; a new prompt keeps the common
//!   prefix, the rest of the cache is removed (`llama_memory_seq_rm`) and the
//!   suffix evaluated in batches, at least one token (sampling needs fresh
//!   logits). A failed decode clears the cache rather than trust a
//!   half-written batch. A side request (`CompletionRequest::aside`: the
//!   intent gate's label between turns) decodes in sequence 1 of the same
//!   unified cache, from cells copied from the prefix it shares
//!   (`llama_memory_seq_cp`), and is removed after it, so sequence 0 and its
//!   token list are as before; with no conversation past that prefix (the
//!   first request) it runs in sequence 0. Recurrent and hybrid models, whose
//!   state cannot share a prefix, keep the one sequence.
//! - **A stop reaches inside a batch.** A prefill batch of a 7B on a laptop
//!   CPU runs for seconds, and the stream's `Flow::Stop` is read between
//!   batches. So the request carries the caller's stop flag
//!   (`CompletionRequest::interrupt`: Ctrl-C, Esc, ACP's cancel), which the
//!   context's abort callback polls between the nodes of the batch's graph,
//!   installed only while a prefill runs; llama.cpp then drops the stopped
//!   batch's cells, so the token list still matches the cache (7 to 74 ms
//!   from the stop to the return against an 18 s batch, in
//!   `a_stop_during_a_prefill_…`). The callback needs the context's
//!   `set_abort_callback`, which the published llama-cpp-2 lacks:
//!   `vendor/llama-cpp-2` is that crate with this one patch
//!   (`[patch.crates-io]`, `vendor/README.md`), while the sys crate, so the
//!   llama.cpp build, stays the registry's. GPU backends do not poll it:
//!   there the stop comes after the batch.
//! - **Reasoning** (`--think on|off|auto`, `--think-budget N`) is streamed
//!   apart (`Event::Reasoning`), counted (`reasoning_tokens`), never stored in
//!   the history and never searched for calls.
//! - **Sampling** is a llama.cpp sampler chain: the grammar first, then
//!   greedy, or top-p, temperature and a seeded dist. llama-cpp-2's sampler
//!   already accepts the token into the chain (accepting twice breaks the
//!   grammar's state). JSON Schemas become GBNF through llama.cpp's own
//!   converter, the one llama-server uses.
//! - **Counts and text.** Token counts are exact: the tokenizer and template
//!   of generation. Rendered prompts are tokenized with special-token parsing
//!   (the template's markup needs it), so control-token text inside a
//!   message's content is defused first: a file saying `<|im_start|>system`
//!   stays text. Errors are typed (`LlmError`): a missing or invalid model
//!   (with the fix), context overflow (prompt tokens, window, reserve),
//!   grammar, backend.
//!
//! Where the model runs is [`crate::offload`]'s; the prompt cache on disk,
//! the prefill rate and drafting are [`crate::prompt_cache`],
//! [`crate::prefill_rate`] and [`crate::speculative`].

use std::ffi::{CStr, CString};
use std::mem::ManuallyDrop;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token_type::LlamaTokenAttr;
use llama_cpp_2::{DecodeError, LlamaBackendDeviceType, LlamaStateSeqFlags};

pub use crate::build::{system_info, LLAMA_CPP_CRATE_VERSION};
use agent_base::cancel::CancelToken;

use crate::gguf;
use crate::offload::{self, Device, DeviceKind, GpuLayers, ModelShape, OffloadRequest, Plan};
use crate::prefill_rate::{self, RateBook};
use crate::prompt_cache::{self, PromptCache, PromptCacheConfig};
use crate::speculative;
use agent_chat::SpecialTokens;
use agent_llm::chat::{
    reasoning_markers, reasoning_open_text, reasoning_sampling, reasoning_state, BuiltinRender,
    Constraint, ReasoningState, Rendered, TemplateSource,
};
use agent_llm::scripted::turn_kind;
use agent_llm::stream::TurnStreamer;
use agent_llm::{
    ChatFormat, Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Message,
    Placement, PrefillRate, Provider, RateSource, Sampling, StopScanner, TemplateInfo, Think,
    ToolChoice, ToolSpec,
};

/// What `llama_decode` returns when the abort callback stopped it; llama.cpp
/// has then removed the stopped batch's cells from the KV cache.
const ABORTED: i32 = 2;

/// When to draft tokens by prompt lookup (greedy decoding only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speculative {
    /// As many as pay on this machine: what a drafted token costs here as
    /// earlier runs measured it (a default share before), against the share
    /// of drafts the model confirms as it runs.
    Auto,
    /// Always the longest draft (tests, benchmarks).
    On,
    Off,
}

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
    /// A Jinja chat template to use instead of the GGUF's (`--chat-template-file`).
    pub chat_template_file: Option<PathBuf>,
    /// Reason before answering (`--think`).
    pub think: Think,
    /// Most tokens a turn may reason (`--think-budget`); default: an eighth
    /// of the context, between 256 and 4096.
    pub think_budget: Option<usize>,
    /// Keep prompts' KV state on disk for the next process (`--prompt-cache`).
    pub prompt_cache: Option<PromptCacheConfig>,
    /// Prompt-lookup speculative decoding (`--speculative`).
    pub speculative: Speculative,
    /// Where measured prefill rates are kept across processes
    /// (`cache/prefill.json` in the state folder; see `prefill_rate`).
    pub prefill_rates: Option<PathBuf>,
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
            chat_template_file: None,
            think: Think::Auto,
            think_budget: None,
            prompt_cache: None,
            speculative: Speculative::Auto,
            prefill_rates: None,
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

/// llama.cpp multiplies on Intel AMX tiles wherever the CPU lists them
/// (`amx_tile` in /proc/cpuinfo), once the kernel grants the tile state
/// (`arch_prctl(ARCH_REQ_XCOMP_PERM)`). Some virtual machines (Firecracker,
/// found on this project's CI) grant it and still fault on the first tile
/// instruction: the process dies of SIGILL in its first prefill. Where the
/// CPU lists AMX, that one request is refused for this process by a seccomp
/// filter (all threads), so llama.cpp's own check ("AMX is not ready to be
/// used!") sends it to its AVX-512 kernels. The filter needs
/// `no_new_privs` without CAP_SYS_ADMIN: the agent's own children then
/// cannot gain privileges through setuid programs either (its commands never
/// could, inside the sandbox). Done before llama.cpp starts; a failure to
/// install it is logged and changes nothing.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn refuse_amx_tiles() {
    const ARCH_REQ_XCOMP_PERM: u32 = 0x1023;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !cpuinfo.split_whitespace().any(|flag| flag == "amx_tile") {
        return;
    }
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    // seccomp_data: nr at 0, args[0] (low half on x86_64) at 16.
    let filter = [
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            3,
            libc::SYS_arch_prctl as u32,
        ),
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 16),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            ARCH_REQ_XCOMP_PERM,
        ),
        op(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl takes integers; seccomp reads `program`, which outlives
    // the call, and copies the filter into the kernel.
    let installed = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_TSYNC,
                &program as *const libc::sock_fprog,
            ) == 0
    };
    if !installed {
        tracing::warn!(
            "could not keep llama.cpp off AMX tiles ({}); on a VM that lists them without supporting them it dies of SIGILL",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn refuse_amx_tiles() {}

/// The llama.cpp backend may be initialised once per process.
pub(crate) fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp prints a lot to stderr; route it into `tracing`, where
            // the CLI's filter keeps it quiet unless `-vv` is given.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            refuse_amx_tiles();
            crate::backends::load()?;
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Backend(e.clone()))
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

/// The book of measured prefill rates for this model, placement, thread
/// count and batch size (None without `config.prefill_rates`).
fn rate_book(
    config: &EngineConfig,
    plan: &Plan,
    model_file: &prompt_cache::ModelFile,
    threads: i32,
    n_batch: u32,
) -> Option<RateBook> {
    let rates_file = config.prefill_rates.as_ref()?;
    let on_gpu = plan.gpu_layers > 0;
    let device = plan.device.as_ref().filter(|_| on_gpu).map(|d| &d.name);
    let placement = match device {
        Some(name) => format!(
            "{}/{} layers on {name}, {threads} threads",
            plan.gpu_layers, plan.model_layers
        ),
        None => format!("CPU, {threads} threads"),
    };
    let context = format!(
        "prefill gpu_layers={} device={device:?} threads={threads} batch={n_batch}",
        plan.gpu_layers
    );
    let key = model_file.key(&context);
    let model = config
        .model_path
        .file_name()?
        .to_string_lossy()
        .into_owned();
    Some(RateBook::new(
        rates_file,
        prompt_cache::hex(&key),
        model,
        placement,
    ))
}

/// What a loaded engine would size its first prompt by, without loading
/// the weights: its context window and its prefill rate (measured on this
/// machine, else estimated). `--print-prompt` sizes by it, as a real run does.
#[derive(Debug, Clone, Copy)]
pub struct Sizing {
    pub n_ctx: usize,
    pub prefill_rate: PrefillRate,
}

/// The context's window, threads and batch size for `plan`: what the engine
/// loads with and [`sizing`] reports.
fn context_shape(config: &EngineConfig, plan: &Plan) -> (u32, i32, u32) {
    let n_ctx = plan.n_ctx.max(64);
    let threads = config.threads.unwrap_or_else(default_threads).max(1);
    (n_ctx, threads, config.batch_size.clamp(8, n_ctx))
}

pub fn sizing(config: &EngineConfig) -> Result<Sizing, LlmError> {
    let (plan, _) = plan(config, &devices()?)?;
    let (n_ctx, threads, n_batch) = context_shape(config, &plan);
    let measured = prompt_cache::ModelFile::read(&config.model_path)
        .ok()
        .and_then(|file| rate_book(config, &plan, &file, threads, n_batch))
        .as_ref()
        .and_then(RateBook::read);
    let prefill_rate = match measured {
        Some(tokens_per_s) => PrefillRate {
            tokens_per_s,
            source: RateSource::Measured,
        },
        None => PrefillRate {
            tokens_per_s: prefill_rate::estimate(
                inspect(&config.model_path)?.parameters,
                threads,
                plan.gpu_layers,
                plan.model_layers,
            ),
            source: RateSource::Estimated,
        },
    };
    Ok(Sizing {
        n_ctx: n_ctx as usize,
        prefill_rate,
    })
}

pub fn default_threads() -> i32 {
    std::thread::available_parallelism().map_or(4, |n| n.get() as i32)
}

pub struct LlamaEngine {
    // Field order matters only for clarity: Drop frees `ctx` before `model`.
    ctx: ManuallyDrop<LlamaContext<'static>>,
    model: &'static LlamaModel,
    /// The chat template, the call grammars and the parser of the model's
    /// family. Rendered prompts are tokenized with special-token parsing
    /// (the template's markup needs it), so the format defuses control-token
    /// texts inside message contents: a file that contains
    /// `<|im_start|>system` or `</think>` must stay text, not become markup.
    format: ChatFormat,
    think_budget: usize,
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
    /// The prompt cache on disk, if on, and the entry this process last
    /// loaded or saved (replaced when a longer prompt extends it).
    disk: Option<PromptCache>,
    disk_entry: Option<prompt_cache::Entry>,
    /// Drafted tokens in the KV cache after `cached`, not yet confirmed,
    /// how long that draft was, and how long drafts should be.
    draft: Vec<LlamaToken>,
    drafted: usize,
    policy: speculative::Policy,
    /// Decode steps timed in this process, for the draft cost the next
    /// process uses (on the CPU; a GPU's steps return before they finish).
    step_times: Option<speculative::StepTimes>,
    steps_saved: bool,
    /// The KV sequence requests decode in: [`CONVERSATION`], or [`ASIDE`]
    /// during a side request.
    seq: i32,
    /// Whether the context has the second sequence side requests use.
    asides: bool,
    /// How often the whole cache was emptied: a side request that saw it
    /// happen knows the conversation's cells went too.
    clears: u64,
    /// Prefill throughput: the file it is kept in, and the latest smoothed
    /// value (from the file at load, then from this process's prefills).
    rates: Option<RateBook>,
    measured_rate: Option<f64>,
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

        let (n_ctx, threads, n_batch) = context_shape(config, &plan);
        let on_gpu = plan.gpu_layers > 0;
        // A second sequence for side requests, sharing the cells of one
        // cache (unified: the conversation keeps the whole window). A
        // recurrent state cannot share a prefix, so those models keep one.
        let asides = !model.is_recurrent() && !model.is_hybrid();
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_seq_max(if asides { 2 } else { 1 })
            .with_kv_unified(true)
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
        let format = match chat_format(model, config) {
            Ok(format) => format,
            Err(e) => {
                drop(ctx);
                // SAFETY: the context that borrowed the model is gone.
                unsafe { drop(Box::from_raw(model as *const LlamaModel as *mut LlamaModel)) };
                return Err(e);
            }
        };
        tracing::info!("model placed: {}", plan.summary());
        let model_file = if config.prompt_cache.is_some() || config.prefill_rates.is_some() {
            prompt_cache::ModelFile::read(path)
                .map_err(|e| {
                    tracing::warn!(
                        "prompt cache and prefill rates off: cannot read {} ({e})",
                        path.display()
                    )
                })
                .ok()
        } else {
            None
        };
        let disk = config
            .prompt_cache
            .as_ref()
            .zip(model_file.as_ref())
            .map(|(cache, file)| {
                // Everything that shapes the saved state: the context's size and
                // where its KV cache lives.
                let context = format!("n_ctx={n_ctx} offload_kqv={on_gpu} seq=0 asides={asides}");
                PromptCache::new(cache, file.key(&context))
            });
        let rates = model_file
            .as_ref()
            .and_then(|file| rate_book(config, &plan, file, threads, n_batch));
        let measured_rate = rates.as_ref().and_then(RateBook::read);
        Ok(Self {
            ctx: ManuallyDrop::new(ctx),
            model,
            format,
            think_budget: config
                .think_budget
                .unwrap_or_else(|| default_think_budget(n_ctx as usize)),
            model_path: path.clone(),
            cached: Vec::new(),
            n_ctx: n_ctx as usize,
            n_batch: n_batch as usize,
            threads,
            plan,
            config: config.clone(),
            cpu_fallback: None,
            disk,
            disk_entry: None,
            draft: Vec::new(),
            drafted: 0,
            policy: speculative::Policy::new(on_gpu).with_measured_cost(
                rates
                    .as_ref()
                    .filter(|_| !on_gpu)
                    .and_then(RateBook::read_draft_cost),
            ),
            step_times: (!on_gpu).then(speculative::StepTimes::default),
            seq: CONVERSATION,
            asides,
            clears: 0,
            steps_saved: false,
            rates,
            measured_rate,
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
        self.clears += 1;
        self.cached.clear();
        self.draft.clear();
        self.drafted = 0;
    }

    /// The chat template prompts are rendered with, and its family.
    pub fn chat_format(&self) -> &ChatFormat {
        &self.format
    }

    /// The prompt for `request`, as generation starts from it.
    pub fn render(&mut self, request: &CompletionRequest) -> Rendered {
        self.format.render(request)
    }

    /// The prompt text for a conversation without tools (tests, benchmarks).
    pub fn render_messages(&self, messages: &[Message]) -> Result<String, LlmError> {
        self.format
            .try_render(&CompletionRequest::new(messages.to_vec()))
            .map(|r| r.text)
            .map_err(|e| LlmError::Template(e.to_string()))
    }

    /// Tokenizes a rendered prompt (special tokens such as `<|im_start|>` are
    /// parsed). The vocabulary's BOS is added unless the template wrote it.
    pub fn tokenize_prompt(&self, text: &str) -> Vec<LlamaToken> {
        tokenize_prompt(self.model, &self.format.tokens().bos, text)
    }

    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), LlmError> {
        self.ctx.decode(batch).map_err(|e| self.decode_failed(e))
    }

    fn decode_failed(&mut self, e: DecodeError) -> LlmError {
        // The cache may now hold a partial batch; forget it rather than
        // trust it on the next call.
        self.clear_cache();
        LlmError::Backend(format!("decode failed: {e}"))
    }

    /// Sampling while the model reasons: free of any grammar, as the
    /// model's makers advise (greedy decoding loops inside think blocks).
    fn reasoning_sampler(&self, family: agent_chat::Family, seed: u32) -> LlamaSampler {
        sampling_chain(self.model, Vec::new(), reasoning_sampling(family, seed))
    }

    /// Sampling of the answer: the request's sampling, under the call
    /// grammar (or the request's own). Made when the answer begins, so a
    /// lazy grammar's triggers never see the reasoning.
    fn answer_sampler(
        &self,
        request: &CompletionRequest,
        constraint: Option<&Constraint>,
    ) -> Result<LlamaSampler, LlmError> {
        let rejected = |e| LlmError::Grammar(format!("llama.cpp rejected the grammar ({e})"));
        let grammar = match constraint {
            None => None,
            Some(Constraint::Full(g)) => {
                Some(LlamaSampler::grammar(self.model, &g.gbnf, &g.root).map_err(rejected)?)
            }
            Some(Constraint::Lazy {
                grammar,
                trigger_patterns,
                trigger_words,
            }) => {
                // An opener that is one token of the vocabulary also
                // triggers as that token.
                let vocab = self.model.vocab();
                let tokens: Vec<LlamaToken> = trigger_words
                    .iter()
                    .map(|w| vocab.tokenize(w.as_bytes(), false, true))
                    .filter(|t| t.len() == 1)
                    .map(|t| t[0])
                    .collect();
                Some(
                    LlamaSampler::grammar_lazy_patterns(
                        self.model,
                        &grammar.gbnf,
                        &grammar.root,
                        trigger_patterns,
                        &tokens,
                    )
                    .map_err(rejected)?,
                )
            }
        };
        Ok(sampling_chain(
            self.model,
            grammar.into_iter().collect(),
            request.sampling,
        ))
    }

    /// Drops the cached tokens that differ from `prompt` and returns how many
    /// are kept. At least one prompt token is always left to evaluate, since
    /// sampling needs fresh logits.
    fn reuse_prefix(&mut self, prompt: &[LlamaToken]) -> usize {
        let common = prompt_cache::common_prefix(&self.cached, prompt);
        let keep = common.min(prompt.len().saturating_sub(1));
        if keep < self.cached.len() {
            if self
                .ctx
                .kv_cache_seq_rm(self.seq, Some(keep as u32), None)
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

    fn prefill_rate(&self) -> Option<PrefillRate> {
        let (tokens_per_s, source) = match self.measured_rate {
            Some(rate) => (rate, RateSource::Measured),
            None => (
                prefill_rate::estimate(
                    self.model.n_params(),
                    self.threads,
                    self.plan.gpu_layers,
                    self.plan.model_layers,
                ),
                RateSource::Estimated,
            ),
        };
        Some(PrefillRate {
            tokens_per_s,
            source,
        })
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(self
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len())
    }

    fn template(&self) -> Option<TemplateInfo> {
        Some(self.format.info().clone())
    }

    fn native_calls(&self) -> bool {
        self.format.family() != agent_chat::Family::Generic
    }

    fn think_budget(&self) -> usize {
        if self.format.thinking(&CompletionRequest::default()) {
            self.think_budget
        } else {
            0
        }
    }

    fn count_prompt_tokens(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, LlmError> {
        self.format.count_prompt_tokens(messages, tools, &|text| {
            Ok(self.tokenize_prompt(text).len())
        })
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
        let mut on_event = request.watched(on_event);
        let result = self.complete_once(request, &mut |event| {
            streamed |= matches!(event, Event::Text(_));
            on_event(event)
        });
        match result {
            Err(LlmError::Backend(failure)) if !streamed && self.cpu_fallback.is_some() => {
                self.fall_back_to_cpu(&failure)?;
                self.complete_once(request, &mut on_event)
            }
            other => other,
        }
    }

    fn save_prompt_cache(&mut self) -> usize {
        self.save_to_disk(SaveWhen::SessionEnd)
    }
}

/// A request as the engine starts on it: rendered and tokenized once,
/// whichever sequence then decodes it.
struct Prepared<'a> {
    request: &'a CompletionRequest,
    rendered: Rendered,
    prompt: Vec<LlamaToken>,
    started: Instant,
}

/// The KV sequence of the conversation, the one the prompt cache keeps.
const CONVERSATION: i32 = 0;
/// The KV sequence of side requests ([`CompletionRequest::aside`]).
const ASIDE: i32 = 1;

impl LlamaEngine {
    fn complete_once(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let rendered = self.format.render(request);
        let prompt = self.tokenize_prompt(&rendered.text);
        let prepared = Prepared {
            request,
            rendered,
            prompt,
            started,
        };
        if request.aside && self.asides {
            return self.complete_aside(prepared, on_event);
        }
        self.complete_in_sequence(prepared, on_event)
    }

    /// A side request in the second sequence: it starts from the cells of
    /// the prefix it shares with the conversation (copied, not decoded
    /// again), and the conversation's cells and tokens are as before when
    /// it ends, so the next turn reuses them all.
    fn complete_aside(
        &mut self,
        prepared: Prepared<'_>,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let shared = prompt_cache::common_prefix(&self.cached, &prepared.prompt);
        if shared >= self.cached.len() {
            // Nothing of the conversation's past its shared prefix to keep
            // (the gate before a session's first request): decoding here
            // leaves that prefix cached for the request that follows.
            return self.complete_in_sequence(prepared, on_event);
        }
        let conversation = std::mem::take(&mut self.cached);
        let clears = self.clears;
        let _ = self.ctx.kv_cache_seq_rm(ASIDE, None, None);
        let copied = self
            .ctx
            .copy_kv_cache_seq(CONVERSATION, ASIDE, None, Some(shared as u32))
            .is_ok();
        self.cached = conversation[..if copied { shared } else { 0 }].to_vec();
        self.seq = ASIDE;
        let result = self.complete_in_sequence(prepared, on_event);
        let _ = self.ctx.kv_cache_seq_rm(ASIDE, None, None);
        self.seq = CONVERSATION;
        self.draft.clear();
        self.drafted = 0;
        // Emptied meanwhile (a failed decode): the conversation's cells too.
        self.cached = if self.clears == clears {
            conversation
        } else {
            Vec::new()
        };
        result
    }

    fn complete_in_sequence(
        &mut self,
        prepared: Prepared<'_>,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let Prepared {
            request,
            rendered,
            prompt,
            started,
        } = prepared;
        let reserve = request.max_tokens.min(self.n_ctx / 4).max(1);
        if prompt.is_empty() || prompt.len() + reserve > self.n_ctx {
            return Err(LlmError::ContextOverflow {
                prompt_tokens: prompt.len(),
                n_ctx: self.n_ctx,
                reserve,
            });
        }
        let constraint = self.format.constraint(request);
        // A grammar llama.cpp refuses is an error before any work is done.
        drop(self.answer_sampler(request, constraint.as_ref())?);

        let reused = self.reuse_prefix(&prompt);
        let loaded = self.load_from_disk(&prompt, reused);
        let reused = reused.max(loaded);
        let mut result = Completion {
            prompt_tokens: prompt.len(),
            reused_tokens: reused,
            cache_loaded_tokens: loaded,
            ..Completion::default()
        };
        let suffix = &prompt[reused..];
        let interrupt = request.interrupt.as_ref();
        let Some(logits_at) = self.prefill(suffix, interrupt, &mut result, on_event)? else {
            result.finish = FinishReason::Cancelled;
            result.prefill_ms = ms_since(started);
            return Ok(result);
        };
        result.prefill_ms = ms_since(started);

        let decode_started = Instant::now();
        let kind = turn_kind(&self.format, request);
        let mut turn = TurnText::new(&rendered, kind, &request.stop);
        let finish = self.generate(
            request,
            &rendered,
            constraint.as_ref(),
            &mut turn,
            logits_at,
            &mut result,
            started,
            on_event,
        );
        self.drop_draft();
        self.save_decode_steps();
        let finish = finish?;
        result.finish = finish;
        turn.end(finish, on_event);
        result.text = turn.text().to_string();
        result.completion_tokens = result.tokens.len();
        result.decode_ms = ms_since(decode_started);
        result.cache_saved_tokens = self.save_to_disk(SaveWhen::Prefilled(result.prefilled_tokens));
        let mut parsed = self
            .format
            .parse(&result.text, request, rendered.reasoning_open);
        if parsed.is_err() && finish == FinishReason::Length {
            // Cut off inside a further call: the complete ones before it
            // stand (the loop acts on the first).
            let family = rendered.family;
            let last_opener = family
                .openers()
                .iter()
                .filter_map(|o| result.text.rfind(o))
                .max();
            if let Some(cut) = last_opener.filter(|&at| at > 0) {
                let before =
                    self.format
                        .parse(&result.text[..cut], request, rendered.reasoning_open);
                if before.as_ref().is_ok_and(|t| !t.calls.is_empty()) {
                    parsed = before;
                }
            }
        }
        result.set_turn(parsed);
        Ok(result)
    }

    /// Evaluates `suffix` after the cached prefix. Returns the index of the
    /// logits to sample from, or None when the caller stopped it: between
    /// batches through `on_event`, inside one through `interrupt`.
    ///
    /// A prefill batch of a 7B on a laptop CPU runs for seconds, so the
    /// stop flag is polled inside it too: llama.cpp's abort callback, asked
    /// between the nodes of the batch's graph (by the CPU backend; a GPU's
    /// finishes the batch). Only prefills install it: a generation step is
    /// one token, and stopping between steps is soon enough.
    fn prefill(
        &mut self,
        suffix: &[LlamaToken],
        interrupt: Option<&CancelToken>,
        result: &mut Completion,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Option<i32>, LlmError> {
        if let Some(token) = interrupt.cloned() {
            self.ctx
                .set_abort_callback(Some(Box::new(move || token.is_cancelled())));
        }
        let prefilled = self.prefill_batches(suffix, result, on_event);
        if interrupt.is_some() {
            self.ctx.set_abort_callback(None);
        }
        prefilled
    }

    fn prefill_batches(
        &mut self,
        suffix: &[LlamaToken],
        result: &mut Completion,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Option<i32>, LlmError> {
        let started = Instant::now();
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut done = 0;
        for chunk in suffix.chunks(self.n_batch) {
            batch.clear();
            for (i, &token) in chunk.iter().enumerate() {
                let is_last = done + i + 1 == suffix.len();
                batch
                    .add(token, (self.cached.len() + i) as i32, &[self.seq], is_last)
                    .map_err(|e| LlmError::Backend(e.to_string()))?;
            }
            match self.ctx.decode(&mut batch) {
                Ok(()) => {}
                // Stopped inside the batch: llama.cpp removed its cells, so
                // the cache still holds exactly `cached`.
                Err(DecodeError::Unknown(ABORTED)) => return Ok(None),
                Err(e) => return Err(self.decode_failed(e)),
            }
            self.cached.extend_from_slice(chunk);
            done += chunk.len();
            result.prefilled_tokens = done;
            if on_event(Event::Prefill {
                done,
                total: suffix.len(),
            }) == Flow::Stop
            {
                return Ok(None);
            }
        }
        if let Some(rate) = self
            .rates
            .as_ref()
            .and_then(|book| book.record(done, started.elapsed().as_secs_f64()))
        {
            self.measured_rate = Some(rate);
        }
        Ok(Some(batch.n_tokens() - 1))
    }

    /// Generates the turn: the reasoning (opened by the engine when
    /// thinking is on and the prompt did not open it; closed by the engine
    /// at the think budget), then the answer under its grammar.
    #[allow(clippy::too_many_arguments)]
    fn generate(
        &mut self,
        request: &CompletionRequest,
        rendered: &Rendered,
        constraint: Option<&Constraint>,
        turn: &mut TurnText,
        mut logits_at: i32,
        result: &mut Completion,
        started: Instant,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<FinishReason, LlmError> {
        let family = rendered.family;
        let (_, close) = reasoning_markers(family);
        let budget = if rendered.thinking {
            self.think_budget
        } else {
            0
        };
        let seed = request.sampling.seed;
        if rendered.thinking && !rendered.reasoning_open {
            let open = reasoning_open_text(family);
            if let Some(finish) = self.force(open, turn, &mut logits_at, result, on_event)? {
                return Ok(finish);
            }
        }
        let mut state = turn.state();
        let mut sampler = match state {
            ReasoningState::Open { .. } => self.reasoning_sampler(family, seed),
            _ => self.answer_sampler(request, constraint)?,
        };
        let may_call = request.tool_choice != ToolChoice::None || request.tools.is_empty();
        let mut answer_tokens = 0;
        let vocab = self.model.vocab();
        loop {
            let reasoning = matches!(state, ReasoningState::Open { .. });
            if reasoning && result.reasoning_tokens >= budget {
                // The budget is spent (or thinking is off where the prompt
                // opened the block): close it, and the answer follows.
                let close = family.reasoning_close();
                if let Some(finish) = self.force(close, turn, &mut logits_at, result, on_event)? {
                    return Ok(finish);
                }
                state = turn.state();
                sampler = self.answer_sampler(request, constraint)?;
                continue;
            }
            if answer_tokens >= request.max_tokens {
                return Ok(FinishReason::Length);
            }
            if self.cached.len() >= self.n_ctx {
                return Ok(FinishReason::ContextFull);
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
            // Special tokens keep their text: they are the family's markup.
            let piece = vocab.token_to_piece(token, true, None);
            let closes_reasoning = reasoning && piece == close.as_bytes();
            if vocab.is_eog(token) && !request.ignore_eos && !closes_reasoning {
                if reasoning {
                    // It ended while thinking: close the block, as at the
                    // budget; the answer (or the call) must still follow.
                    let close = family.reasoning_close();
                    if let Some(finish) =
                        self.force(close, turn, &mut logits_at, result, on_event)?
                    {
                        return Ok(finish);
                    }
                    state = turn.state();
                    sampler = self.answer_sampler(request, constraint)?;
                    continue;
                }
                return Ok(FinishReason::Stop);
            }
            result.tokens.push(token.0);
            if reasoning {
                result.reasoning_tokens += 1;
            } else {
                answer_tokens += 1;
            }
            if let Some(finish) = turn.push(&piece, on_event) {
                return Ok(finish);
            }
            if on_event(Event::Generated(result.tokens.len())) == Flow::Stop {
                return Ok(FinishReason::Cancelled);
            }
            if !may_call && turn.cut_at_call(&self.format) {
                return Ok(FinishReason::StopSequence);
            }
            let next = turn.state();
            // Drafts only where decoding is greedy: there the model's choice
            // is the argmax, and a confirmed draft is exactly that choice.
            let speculate = self.config.speculative != Speculative::Off
                && request.sampling.is_greedy()
                && matches!(next, ReasoningState::Answer { .. });
            logits_at = self.advance(token, logits_at, speculate, result)?;
            match (state, next) {
                (ReasoningState::Open { .. }, ReasoningState::Answer { .. }) => {
                    sampler = self.answer_sampler(request, constraint)?;
                }
                (ReasoningState::Undecided, ReasoningState::Open { .. }) => {
                    sampler = self.reasoning_sampler(family, seed);
                }
                _ => {}
            }
            state = next;
        }
    }

    /// Writes `text` into the turn as if the model had generated it (the
    /// reasoning's opening or closing). Returns why the turn must end, if it
    /// must.
    fn force(
        &mut self,
        text: &str,
        turn: &mut TurnText,
        logits_at: &mut i32,
        result: &mut Completion,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Option<FinishReason>, LlmError> {
        self.drop_draft();
        let tokens = self.model.vocab().tokenize(text.as_bytes(), false, true);
        if self.cached.len() + tokens.len() >= self.n_ctx {
            return Ok(Some(FinishReason::ContextFull));
        }
        let mut batch = LlamaBatch::new(tokens.len().max(1), 1);
        for (i, &token) in tokens.iter().enumerate() {
            batch
                .add(
                    token,
                    (self.cached.len() + i) as i32,
                    &[self.seq],
                    i + 1 == tokens.len(),
                )
                .map_err(|e| LlmError::Backend(e.to_string()))?;
        }
        self.decode(&mut batch)?;
        self.cached.extend_from_slice(&tokens);
        result.tokens.extend(tokens.iter().map(|t| t.0));
        *logits_at = batch.n_tokens() - 1;
        Ok(turn.push(text.as_bytes(), on_event))
    }

    /// Puts the accepted `token` into the KV cache and returns the index of
    /// the logits that follow it. A drafted token the model just confirmed
    /// is there already. Otherwise the drafts go, and `token` is decoded
    /// with a new draft behind it (prompt lookup, see [`speculative`]): the
    /// next samples, each under the sampler (and its grammar) as always,
    /// confirm it token by token, so the output is the one plain decoding
    /// gives.
    fn advance(
        &mut self,
        token: LlamaToken,
        logits_at: i32,
        speculate: bool,
        result: &mut Completion,
    ) -> Result<i32, LlmError> {
        if self.draft.first() == Some(&token) {
            self.draft.remove(0);
            self.cached.push(token);
            result.draft_accepted += 1;
            return Ok(logits_at + 1);
        }
        self.drop_draft();
        let room = self
            .n_ctx
            .saturating_sub(self.cached.len() + 2)
            .min(self.n_batch - 1)
            .min(match self.config.speculative {
                Speculative::Auto => self.policy.draft_len(),
                _ => speculative::MAX_DRAFT,
            });
        let draft = if speculate {
            speculative::draft(&self.cached, token, room)
        } else {
            Vec::new()
        };
        let mut batch = LlamaBatch::new(1 + draft.len(), 1);
        for (i, &t) in std::iter::once(&token).chain(&draft).enumerate() {
            batch
                .add(t, (self.cached.len() + i) as i32, &[self.seq], true)
                .map_err(|e| LlmError::Backend(e.to_string()))?;
        }
        let step = Instant::now();
        self.decode(&mut batch)?;
        if let Some(times) = &mut self.step_times {
            times.add(1 + draft.len(), step.elapsed().as_secs_f64());
        }
        self.cached.push(token);
        result.draft_tokens += draft.len();
        self.drafted = draft.len();
        self.draft = draft;
        Ok(0)
    }

    /// Once per process, after its first answer, the decode steps it timed
    /// go to the rate file, for the next process's [`speculative::Policy`]
    /// (this one keeps the cost it began with: see there why it never
    /// follows the load).
    fn save_decode_steps(&mut self) {
        if self.steps_saved {
            return;
        }
        if let (Some(steps), Some(book)) = (&self.step_times, &self.rates) {
            tracing::debug!("speculation: decode steps timed {steps:?}");
            book.record_steps(steps);
            self.steps_saved = true;
        }
    }

    /// Forgets the unconfirmed drafts, and their keys and values.
    fn drop_draft(&mut self) {
        if self.drafted > 0 {
            let confirmed = self.drafted - self.draft.len();
            self.policy.drafted(self.drafted, confirmed);
            self.drafted = 0;
        }
        if self.draft.is_empty() {
            return;
        }
        self.draft.clear();
        if self
            .ctx
            .kv_cache_seq_rm(self.seq, Some(self.cached.len() as u32), None)
            .is_err()
        {
            self.clear_cache();
        }
    }

    /// Loads the entry of the prompt cache on disk that shares the longest
    /// prefix with `prompt`, when it holds more than the KV cache already
    /// does (`reused`). Returns the prompt tokens it provides.
    fn load_from_disk(&mut self, prompt: &[LlamaToken], reused: usize) -> usize {
        if self.seq != CONVERSATION {
            return 0;
        }
        let started = Instant::now();
        let Some((entry, keep, state)) = self.read_from_disk(prompt, reused) else {
            return 0;
        };
        self.clear_cache();
        // SAFETY: the bytes are llama.cpp's own serialization for a context
        // of this key (model file, build, context size), checked against the
        // digest written with them.
        let restored = unsafe {
            self.ctx
                .state_seq_set_data_ext(&state, CONVERSATION, LlamaStateSeqFlags::empty())
        };
        if !restored {
            tracing::info!(
                "prompt cache: llama.cpp refused {}; removing it",
                entry.path.display()
            );
            let _ = std::fs::remove_file(&entry.path);
            self.clear_cache();
            return 0;
        }
        self.cached = entry.tokens.iter().map(|&t| LlamaToken(t)).collect();
        let dropped = self
            .ctx
            .kv_cache_seq_rm(CONVERSATION, Some(keep as u32), None)
            .is_err();
        if dropped {
            self.clear_cache();
            return 0;
        }
        self.cached.truncate(keep);
        tracing::info!(
            "prompt cache: {keep} of {} prompt tokens from {} ({:.1} MB) in {:.0} ms",
            prompt.len(),
            entry.path.display(),
            state.len() as f64 / 1e6,
            ms_since(started)
        );
        self.disk_entry = Some(entry);
        keep
    }

    /// The best entry for `prompt` on disk, how many of its tokens serve,
    /// and its checked state; None unless it serves more than `reused`.
    fn read_from_disk(
        &self,
        prompt: &[LlamaToken],
        reused: usize,
    ) -> Option<(prompt_cache::Entry, usize, Vec<u8>)> {
        let disk = self.disk.as_ref()?;
        let ids: Vec<i32> = prompt.iter().map(|t| t.0).collect();
        let (entry, common) = disk.best(&ids, reused + MIN_CACHE_TOKENS)?;
        let keep = common.min(prompt.len() - 1);
        if keep < reused + MIN_CACHE_TOKENS {
            return None;
        }
        let state = disk.read_state(&entry)?;
        Some((entry, keep, state))
    }

    /// Saves the KV cache's state to the prompt cache on disk, when it is
    /// worth rewriting (see [`SaveWhen`]); an entry this process last saved
    /// or loaded that it extends is replaced. Returns the tokens saved.
    fn save_to_disk(&mut self, when: SaveWhen) -> usize {
        let Some(disk) = self.disk.as_ref().filter(|_| self.seq == CONVERSATION) else {
            return 0;
        };
        let tokens: Vec<i32> = self.cached.iter().map(|t| t.0).collect();
        let extends = self
            .disk_entry
            .as_ref()
            .filter(|old| tokens.starts_with(&old.tokens));
        let worth = match when {
            SaveWhen::Prefilled(prefilled) => {
                prefilled >= MIN_CACHE_TOKENS
                    && extends.is_none_or(|old| tokens.len() >= old.tokens.len() * 3 / 2)
            }
            SaveWhen::SessionEnd => {
                let known = extends.map_or(0, |old| old.tokens.len());
                tokens.len() >= known + MIN_CACHE_TOKENS
            }
        };
        if !worth {
            return 0;
        }
        let flags = LlamaStateSeqFlags::empty();
        let size = self.ctx.state_seq_get_size_ext(CONVERSATION, flags);
        let mut state = vec![0u8; size];
        // SAFETY: the buffer holds the size llama.cpp just reported.
        let written = unsafe {
            self.ctx
                .state_seq_get_data_ext(state.as_mut_ptr(), CONVERSATION, flags)
        };
        if written != size {
            tracing::warn!("prompt cache: llama.cpp gave {written} of {size} bytes; not saved");
            return 0;
        }
        match disk.save(&tokens, &state) {
            Ok(path) => {
                if let Some(old) = extends.filter(|old| old.path != path) {
                    disk.remove(&old.path);
                }
                tracing::info!(
                    "prompt cache: saved {} tokens ({:.1} MB) to {}",
                    tokens.len(),
                    size as f64 / 1e6,
                    path.display()
                );
                let saved = tokens.len();
                self.disk_entry = Some(prompt_cache::Entry { path, tokens });
                saved
            }
            Err(e) => {
                tracing::warn!(
                    "prompt cache: cannot save to {} ({e}); the next run prefills again",
                    disk.dir().display()
                );
                0
            }
        }
    }
}

/// A turn's text as it is generated: held back where it may be the start
/// of a stop sequence, shown through the [`TurnStreamer`] (reasoning apart,
/// no call syntax), and read for where its reasoning stands.
struct TurnText {
    family: agent_chat::Family,
    reasoning_open: bool,
    utf8: Utf8Stream,
    stops: StopScanner,
    streamer: TurnStreamer,
}

impl TurnText {
    fn new(rendered: &Rendered, kind: agent_llm::stream::TurnKind, stops: &[String]) -> Self {
        Self {
            family: rendered.family,
            reasoning_open: rendered.reasoning_open,
            utf8: Utf8Stream::default(),
            stops: StopScanner::new(stops),
            streamer: TurnStreamer::new(rendered.family, rendered.reasoning_open, kind),
        }
    }

    fn text(&self) -> &str {
        self.stops.text()
    }

    fn state(&self) -> ReasoningState {
        reasoning_state(self.family, self.text(), self.reasoning_open)
    }

    /// Adds a token's bytes; returns why the turn ends, if it does.
    fn push(
        &mut self,
        bytes: &[u8],
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Option<FinishReason> {
        let piece = self.utf8.push(bytes);
        let (visible, stopped) = self.stops.push(&piece);
        if self.streamer.push(&visible).emit(on_event) == Flow::Stop {
            return Some(FinishReason::Cancelled);
        }
        stopped.then_some(FinishReason::StopSequence)
    }

    /// Ends the text where a call begins in the answer, if one does.
    fn cut_at_call(&mut self, format: &ChatFormat) -> bool {
        let ReasoningState::Answer { from } = self.state() else {
            return false;
        };
        match format.call_start(&self.text()[from..]) {
            Some(at) => {
                self.stops.truncate(from + at);
                true
            }
            None => false,
        }
    }

    /// The turn is over: an incomplete UTF-8 sequence left at the end
    /// becomes U+FFFD, and what was held back is shown.
    fn end(&mut self, finish: FinishReason, on_event: &mut dyn FnMut(Event<'_>) -> Flow) {
        let tail = self.utf8.flush();
        if matches!(finish, FinishReason::Cancelled | FinishReason::StopSequence) {
            return;
        }
        let (visible, _) = self.stops.push(&tail);
        let rest = self.stops.finish();
        self.streamer.push(&visible).emit(on_event);
        self.streamer.push(&rest).emit(on_event);
        self.streamer.finish().emit(on_event);
    }
}

/// The samplers after the grammar (if any): repetition penalty, then
/// greedy or nucleus sampling.
fn sampling_chain(model: &LlamaModel, mut chain: Vec<LlamaSampler>, s: Sampling) -> LlamaSampler {
    if s.repeat_penalty != 1.0 {
        chain.push(LlamaSampler::penalties(
            model.n_vocab(),
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
    LlamaSampler::chain_simple(chain)
}

/// Fewer tokens than this are not worth a disk entry (or reading one).
const MIN_CACHE_TOKENS: usize = 32;

/// When the KV state is worth writing to disk. An entry is rewritten whole
/// (tens of KB per token), so after a request only a cache that grew by half
/// over the entry it extends is saved; at the end of a session everything
/// new is, since the next process resumes from there.
#[derive(Debug, Clone, Copy)]
enum SaveWhen {
    /// After a request that evaluated this many prompt tokens.
    Prefilled(usize),
    /// The conversation ends or pauses (`agent chat` exits).
    SessionEnd,
}

/// The default think budget: an eighth of the context, between 256 and
/// 4096 tokens.
pub fn default_think_budget(n_ctx: usize) -> usize {
    (n_ctx / 8).clamp(256, 4096)
}

/// The chat format of a loaded model (with its weights, or its vocabulary
/// only): `--chat-template-file` or the GGUF's `tokenizer.chat_template`,
/// with llama.cpp's built-in matcher and ChatML as fallbacks; `bos_token`
/// and `eos_token` from the vocabulary; control-token texts defused.
pub fn chat_format(model: &LlamaModel, config: &EngineConfig) -> Result<ChatFormat, LlmError> {
    let own = match &config.chat_template_file {
        Some(path) => Some(TemplateSource::read(path)?),
        None => model.chat_template(None).ok().and_then(|t| {
            t.to_string().ok().map(|text| TemplateSource {
                name: format!(
                    "the GGUF's template ({})",
                    config
                        .model_path
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                ),
                text,
            })
        }),
    };
    let builtin = own.as_ref().and_then(|t| builtin_matcher(&t.text));
    let mut format = ChatFormat::select(own, special_tokens(model), builtin)
        .with_specials(vocab_specials(model));
    format.think = config.think;
    Ok(format)
}

/// The texts of the vocabulary's markup tokens: control tokens
/// (`<|im_end|>`) and added tokens written as markup (`<tool_call>`,
/// `</think>`, `[TOOL_CALLS]`), which the tokenizer matches in any text.
fn vocab_specials(model: &LlamaModel) -> Vec<String> {
    let vocab = model.vocab();
    let mut specials: Vec<String> = vocab
        .tokens()
        .filter(|&t| vocab.is_control(t) || vocab.attr(t).contains(LlamaTokenAttr::UserDefined))
        .filter_map(|t| vocab.text(t).map(|c| c.to_string_lossy().into_owned()))
        .filter(|text| {
            let markup = (text.starts_with('<') && text.ends_with('>'))
                || (text.starts_with('[') && text.ends_with(']'));
            text.chars().count() >= 2 && markup
        })
        .collect();
    specials.sort();
    specials.dedup();
    specials
}

/// `bos_token` and `eos_token` as the template prints them.
fn special_tokens(model: &LlamaModel) -> SpecialTokens {
    let vocab = model.vocab();
    let text = |t: LlamaToken| {
        (t.0 >= 0)
            .then(|| vocab.text(t))
            .flatten()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    SpecialTokens::new(text(vocab.bos()), text(vocab.eos()))
}

/// A rendered prompt as tokens; the vocabulary's BOS is added only when
/// the template did not write it (else the prompt would start with two).
fn tokenize_prompt(model: &LlamaModel, bos: &str, text: &str) -> Vec<LlamaToken> {
    let add_bos = bos.is_empty() || !text.starts_with(bos);
    model.vocab().tokenize(text.as_bytes(), add_bos, true)
}

/// llama.cpp's built-in matcher for `template` (it recognises a family by
/// markers in the text and applies its own code): the first fallback.
fn builtin_matcher(template: &str) -> Option<(String, BuiltinRender)> {
    let template = CString::new(template).ok()?;
    let render: BuiltinRender = Arc::new(move |pairs| apply_builtin(&template, pairs));
    Some(("llama.cpp's built-in template matcher".into(), render))
}

fn apply_builtin(template: &CStr, pairs: &[(String, String)]) -> Result<String, String> {
    let owned = pairs
        .iter()
        .map(|(role, content)| {
            Ok((
                CString::new(role.as_str())?,
                CString::new(content.as_str())?,
            ))
        })
        .collect::<Result<Vec<_>, std::ffi::NulError>>()
        .map_err(|e| e.to_string())?;
    let chat: Vec<llama_cpp_sys_2::llama_chat_message> = owned
        .iter()
        .map(|(role, content)| llama_cpp_sys_2::llama_chat_message {
            role: role.as_ptr(),
            content: content.as_ptr(),
        })
        .collect();
    let mut buf = vec![0u8; 2 * pairs.iter().map(|(r, c)| r.len() + c.len()).sum::<usize>() + 256];
    for _ in 0..2 {
        // SAFETY: the messages' strings outlive the call; the buffer's
        // length is passed with it.
        let n = unsafe {
            llama_cpp_sys_2::llama_chat_apply_template(
                template.as_ptr(),
                chat.as_ptr(),
                chat.len(),
                true,
                buf.as_mut_ptr().cast(),
                buf.len().try_into().unwrap_or(i32::MAX),
            )
        };
        if n < 0 {
            return Err("llama.cpp does not recognise this template".into());
        }
        let n = n as usize;
        if n <= buf.len() {
            buf.truncate(n);
            return String::from_utf8(buf).map_err(|e| e.to_string());
        }
        buf.resize(n, 0);
    }
    Err("llama.cpp's template output kept growing".into())
}

/// A model's chat template and tokenizer without its weights: what
/// `--print-prompt` renders and counts with (the GGUF header and the
/// vocabulary only, no inference).
pub fn load_chat_format(
    config: &EngineConfig,
) -> Result<(ChatFormat, agent_llm::scripted::TokenCounter), LlmError> {
    let backend = backend()?;
    inspect(&config.model_path)?;
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = LlamaModel::load_from_file(backend, &config.model_path, &params).map_err(|e| {
        LlmError::InvalidModel {
            path: config.model_path.display().to_string(),
            reason: format!("llama.cpp could not read its vocabulary ({e})"),
        }
    })?;
    let format = chat_format(&model, config)?;
    let bos = format.tokens().bos.clone();
    let model = Arc::new(model);
    let count = move |text: &str| tokenize_prompt(&model, &bos, text).len();
    Ok((format, Box::new(count)))
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
    fn the_reported_llama_cpp_crate_version_is_the_pinned_one() {
        let manifest = include_str!("../../../Cargo.toml");
        for name in ["llama-cpp-2", "llama-cpp-sys-2"] {
            let pin = format!("{name} = \"={LLAMA_CPP_CRATE_VERSION}\"");
            assert!(manifest.contains(&pin), "Cargo.toml no longer has {pin}");
        }
    }

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
