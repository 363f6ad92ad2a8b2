//! Where the model runs: the offload planner.
//!
//! A pure function from what the user asked (`--gpu-layers`, `--gpu-device`,
//! `--ctx-size`), the devices llama.cpp sees and the model's shape to a plan:
//! which device, how many layers go on it, and the context size. The engine
//! loads with the plan; when the device still runs out of memory it retries
//! with the plans of [`fallbacks`] (half the layers, then the CPU with an
//! empty device list, since llama.cpp's default is every GPU), so a wrong
//! estimate costs a warning, never an abort.
//!
//! Memory is estimated from the GGUF file: weights by file size, the KV cache
//! by layers × KV heads × head size (f16). llama.cpp keeps a layer's KV cache
//! on the layer's device, so each offloaded layer costs its weights plus its
//! share of the cache. The header gives the layers, KV heads, head size and
//! training context; each device comes with its free memory.
//!
//! The default build has no GPU backend (`--features vulkan|cuda|metal|rocm`
//! add one); there the plan is the CPU, with the model's training context
//! fitted to half the free RAM. `agent doctor` prints the same plan without
//! loading, and the plan travels with the engine (`Provider::placement`) into
//! `--json` output and the trace.

use std::fmt;
use std::str::FromStr;

use agent_llm::Placement;
use serde::Serialize;

const MIB: u64 = 1 << 20;
/// Device memory kept free for compute buffers, the driver and other
/// programs (llama.cpp's own fitting keeps 1 GiB; its compute buffers for a
/// 7B model at batch 512 are about 300-500 MiB).
const DEVICE_RESERVE: u64 = 768 * MIB;
/// The context a model gets at least when memory is short (unless
/// `--ctx-size` says otherwise): the agent's system prompt, map and a few
/// tool results need this much.
const MIN_FIT_CTX: u32 = 4096;
/// On the CPU, a window beyond this is memory spent on prompts that take
/// minutes to prefill: a 7B model evaluates about 50-100 tokens/s there.
const CPU_MAX_CTX: u32 = 32_768;
/// Of the host's free memory, the part the CPU-resident weights and KV cache
/// may plan to take.
const HOST_SHARE: f64 = 0.5;
/// Context sizes are rounded down to a multiple of this.
const CTX_STEP: u32 = 256;

/// `--gpu-layers`: how many of the model's layers go to the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuLayers {
    /// As many as fit the device's free memory (the default).
    #[default]
    Auto,
    /// Every layer, whatever the estimate says.
    All,
    /// This many; 0 runs on the CPU.
    Count(u32),
}

impl FromStr for GpuLayers {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(Self::Auto),
            "all" | "max" => Ok(Self::All),
            n => n.parse().map(Self::Count).map_err(|_| {
                format!("`{s}` is not a layer count: use auto, all, or a number (0 = CPU only)")
            }),
        }
    }
}

impl fmt::Display for GpuLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::All => f.write_str("all"),
            Self::Count(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    Cpu,
    Gpu,
    IntegratedGpu,
    Accelerator,
    Unknown,
}

/// A compute device as llama.cpp's backends report it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// ggml's device index (what `--gpu-device` takes).
    pub index: usize,
    /// e.g. `Vulkan0`, `CUDA0`, `CPU`.
    pub name: String,
    /// e.g. `NVIDIA GeForce RTX 4070`.
    pub description: String,
    /// e.g. `Vulkan`, `CUDA`, `Metal`, `CPU`.
    pub backend: String,
    pub kind: DeviceKind,
    pub memory_free: u64,
    pub memory_total: u64,
}

impl Device {
    pub fn is_gpu(&self) -> bool {
        matches!(self.kind, DeviceKind::Gpu | DeviceKind::IntegratedGpu)
    }
}

/// What the planner needs to know of a model, read from its GGUF header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelShape {
    /// Repeating (transformer) layers; llama.cpp offloads these plus one
    /// output layer.
    pub layers: u32,
    pub weights_bytes: u64,
    pub ctx_train: u32,
    /// Bytes of K and V per token over all layers, at f16.
    pub kv_bytes_per_token: u64,
}

impl ModelShape {
    /// What `--gpu-layers all` means: every repeating layer and the output.
    pub fn offloadable_layers(&self) -> u32 {
        self.layers + 1
    }
    fn layer_bytes(&self) -> u64 {
        self.weights_bytes / u64::from(self.offloadable_layers())
    }
    fn kv_layer_bytes_per_token(&self) -> u64 {
        self.kv_bytes_per_token / u64::from(self.layers.max(1))
    }
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OffloadRequest {
    pub layers: GpuLayers,
    /// ggml device index; default: the GPU with the most free memory.
    pub device: Option<usize>,
    /// Context window; default: the model's, fitted to memory.
    pub ctx_size: Option<u32>,
}

/// Where the model runs and with how large a context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The GPU the layers go to (None: the CPU only).
    pub device: Option<PlannedDevice>,
    pub gpu_layers: u32,
    /// What `all` would be (repeating layers + output).
    pub model_layers: u32,
    pub n_ctx: u32,
    /// Why the plan is less than the user might expect, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedDevice {
    pub index: usize,
    pub name: String,
    pub backend: String,
}

impl Plan {
    /// One line: "33/33 layers on Vulkan0, ctx 32768" or "CPU, ctx 8192".
    pub fn summary(&self) -> String {
        let mut s = match &self.device {
            Some(d) if self.gpu_layers > 0 => format!(
                "{}/{} layers on {}, ctx {}",
                self.gpu_layers, self.model_layers, d.name, self.n_ctx
            ),
            _ => format!("CPU, ctx {}", self.n_ctx),
        };
        if let Some(note) = &self.note {
            s.push_str(" (");
            s.push_str(note);
            s.push(')');
        }
        s
    }
}

impl From<&Plan> for Placement {
    fn from(plan: &Plan) -> Self {
        let gpu = plan.device.as_ref().filter(|_| plan.gpu_layers > 0);
        Self {
            backend: gpu.map_or_else(|| "CPU".into(), |d| d.backend.clone()),
            device: gpu.map(|d| d.name.clone()),
            gpu_layers: plan.gpu_layers,
            model_layers: plan.model_layers,
            n_ctx: plan.n_ctx,
            summary: plan.summary(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("there is no device {index}; devices: {available}\n  fix: pick one of them with --gpu-device, or leave it out to use the GPU with the most free memory")]
    NoSuchDevice { index: usize, available: String },
    #[error("device {index} ({name}) is not a GPU\n  fix: --gpu-layers 0 runs on the CPU; --gpu-device takes a GPU's index (`agent doctor` lists them)")]
    NotAGpu { index: usize, name: String },
}

/// The GPU backends this binary was built with.
pub fn compiled_backends() -> Vec<&'static str> {
    let mut backends = Vec::new();
    if cfg!(feature = "cuda") {
        backends.push("cuda");
    }
    if cfg!(feature = "vulkan") {
        backends.push("vulkan");
    }
    if cfg!(feature = "metal") || cfg!(target_os = "macos") {
        backends.push("metal");
    }
    if cfg!(feature = "rocm") {
        backends.push("rocm");
    }
    backends
}

/// Plans where `model` runs on `devices` (as llama.cpp lists them, the CPU
/// included) for `request`. Pure: `backends` are the GPU backends compiled
/// in, for the note that says why there is no GPU.
pub fn plan(
    request: &OffloadRequest,
    devices: &[Device],
    model: &ModelShape,
    backends: &[&str],
) -> Result<Plan, PlanError> {
    let total = model.offloadable_layers();
    let device = match request.device {
        Some(index) => {
            let d = devices.iter().find(|d| d.index == index).ok_or_else(|| {
                PlanError::NoSuchDevice {
                    index,
                    available: device_list(devices),
                }
            })?;
            if !d.is_gpu() {
                return Err(PlanError::NotAGpu {
                    index,
                    name: d.name.clone(),
                });
            }
            Some(d)
        }
        None => devices
            .iter()
            .filter(|d| d.is_gpu())
            .max_by_key(|d| (d.kind == DeviceKind::Gpu, d.memory_free)),
    };
    let mut note = None;
    let wanted = match request.layers {
        GpuLayers::Count(0) => 0,
        GpuLayers::Count(n) if n > total => {
            note = Some(format!("--gpu-layers {n}: the model has {total}"));
            total
        }
        GpuLayers::Count(n) => n,
        GpuLayers::All | GpuLayers::Auto => total,
    };
    let Some(device) = device.filter(|_| wanted > 0) else {
        let why = if wanted == 0 {
            None
        } else if backends.is_empty() {
            Some(
                "this build has no GPU backend; rebuild with `--features vulkan` (or cuda, metal)"
                    .to_string(),
            )
        } else {
            Some(format!(
                "no GPU found by the {} backend; is its driver installed?",
                backends.join("/")
            ))
        };
        return Ok(cpu_plan(request, devices, model, note.or(why)));
    };

    let budget = device.memory_free.saturating_sub(DEVICE_RESERVE);
    let target_ctx = request.ctx_size.unwrap_or(model.ctx_train);
    let kv_layer = model.kv_layer_bytes_per_token().max(1);
    // The KV cache of `layers` offloaded layers at `ctx` tokens, plus their weights.
    let cost = |layers: u32, ctx: u32| {
        u64::from(layers) * (model.layer_bytes() + kv_layer * u64::from(ctx))
    };
    // The largest context that fits beside `layers` layers' weights.
    let ctx_fitting = |layers: u32| {
        let left = budget.saturating_sub(u64::from(layers) * model.layer_bytes());
        let tokens = left / (kv_layer * u64::from(layers.max(1)));
        round_ctx(tokens.min(u64::from(u32::MAX)) as u32)
    };

    let (layers, n_ctx) = match (request.layers, request.ctx_size) {
        // Auto with the context given: as many layers as fit with it.
        (GpuLayers::Auto, Some(ctx)) => (layers_fitting(budget, model, kv_layer, ctx), ctx),
        (GpuLayers::Auto, None) => {
            let min_ctx = target_ctx.min(MIN_FIT_CTX);
            if cost(total, min_ctx) <= budget {
                // Everything fits: the context takes what is left, up to the model's.
                (total, target_ctx.min(ctx_fitting(total)).max(min_ctx))
            } else {
                (layers_fitting(budget, model, kv_layer, min_ctx), min_ctx)
            }
        }
        // All or a count: the layers are the user's; fit the context to them.
        (_, Some(ctx)) => (wanted, ctx),
        (_, None) => {
            let fit = ctx_fitting(wanted);
            let min_ctx = target_ctx.min(MIN_FIT_CTX);
            if fit < min_ctx {
                note.get_or_insert_with(|| {
                    format!(
                        "{wanted} layers may not fit the {} MiB free on {}",
                        device.memory_free / MIB,
                        device.name
                    )
                });
            }
            (wanted, target_ctx.min(fit).max(min_ctx))
        }
    };
    if layers == 0 {
        let why = format!(
            "{} has {} MiB free, too little for one layer and the cache",
            device.name,
            device.memory_free / MIB
        );
        return Ok(cpu_plan(request, devices, model, Some(why)));
    }
    if layers < total && request.layers == GpuLayers::Auto {
        note.get_or_insert_with(|| {
            format!(
                "the rest do not fit the {} MiB free on {}",
                device.memory_free / MIB,
                device.name
            )
        });
    }
    Ok(Plan {
        device: Some(PlannedDevice {
            index: device.index,
            name: device.name.clone(),
            backend: device.backend.clone(),
        }),
        gpu_layers: layers,
        model_layers: total,
        n_ctx: n_ctx.max(64),
        note,
    })
}

/// The plans to try, in order, when loading with `failed` runs out of
/// memory: half the layers on the same device, then the CPU.
pub fn fallbacks(
    failed: &Plan,
    request: &OffloadRequest,
    devices: &[Device],
    model: &ModelShape,
) -> Vec<Plan> {
    let mut plans = Vec::new();
    if let Some(device) = &failed.device {
        let half = failed.gpu_layers / 2;
        if half > 0 {
            plans.push(Plan {
                gpu_layers: half,
                note: Some(format!("{} layers did not fit", failed.gpu_layers)),
                device: Some(device.clone()),
                ..failed.clone()
            });
        }
        let why = format!("{} could not take the model", device.name);
        plans.push(cpu_plan(request, devices, model, Some(why)));
    }
    plans
}

/// Loads with the first of `plans` that works. A failure on a GPU plan moves
/// on to the next; a failure on the CPU is the answer. Returns what loaded,
/// the plan it loaded with, and the warning to show when that is not the
/// first plan.
pub fn load_first<T, E: fmt::Display>(
    plans: impl IntoIterator<Item = Plan>,
    mut load: impl FnMut(&Plan) -> Result<T, E>,
) -> Result<(T, Plan, Option<String>), E> {
    let mut first_failure = None;
    let mut plans = plans.into_iter().peekable();
    while let Some(plan) = plans.next() {
        match load(&plan) {
            Ok(loaded) => {
                let warning = first_failure.map(|(tried, e): (String, E)| {
                    format!(
                        "could not run the model with {tried} ({e}); running it with {}",
                        plan.summary()
                    )
                });
                return Ok((loaded, plan, warning));
            }
            Err(e) if plan.gpu_layers > 0 && plans.peek().is_some() => {
                first_failure.get_or_insert((plan.summary(), e));
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("load_first needs at least one plan")
}

fn cpu_plan(
    request: &OffloadRequest,
    devices: &[Device],
    model: &ModelShape,
    note: Option<String>,
) -> Plan {
    let n_ctx = request.ctx_size.unwrap_or_else(|| {
        let mut ctx = model.ctx_train.min(CPU_MAX_CTX);
        let host_free = devices
            .iter()
            .find(|d| d.kind == DeviceKind::Cpu)
            .map(|d| d.memory_free)
            .filter(|&free| free > 0);
        if let Some(free) = host_free {
            let left = ((free as f64 * HOST_SHARE) as u64).saturating_sub(model.weights_bytes);
            let fit =
                round_ctx((left / model.kv_bytes_per_token.max(1)).min(u64::from(u32::MAX)) as u32);
            ctx = ctx.min(fit.max(ctx.min(MIN_FIT_CTX)));
        }
        ctx
    });
    Plan {
        device: None,
        gpu_layers: 0,
        model_layers: model.offloadable_layers(),
        n_ctx: n_ctx.max(64),
        note,
    }
}

/// Layers that fit `budget` with a `ctx`-token cache each, at most all.
fn layers_fitting(budget: u64, model: &ModelShape, kv_layer: u64, ctx: u32) -> u32 {
    let per_layer = model.layer_bytes() + kv_layer * u64::from(ctx);
    let n = budget / per_layer.max(1);
    n.min(u64::from(model.offloadable_layers())) as u32
}

fn round_ctx(n: u32) -> u32 {
    n / CTX_STEP * CTX_STEP
}

fn device_list(devices: &[Device]) -> String {
    if devices.is_empty() {
        return "none".into();
    }
    devices
        .iter()
        .map(|d| format!("{} {} ({})", d.index, d.name, d.description))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn cpu(free: u64) -> Device {
        Device {
            index: 0,
            name: "CPU".into(),
            description: "x86".into(),
            backend: "CPU".into(),
            kind: DeviceKind::Cpu,
            memory_free: free,
            memory_total: free,
        }
    }

    fn gpu(index: usize, free: u64) -> Device {
        Device {
            index,
            name: format!("Vulkan{}", index - 1),
            description: "a GPU".into(),
            backend: "Vulkan".into(),
            kind: DeviceKind::Gpu,
            memory_free: free,
            memory_total: free,
        }
    }

    /// A 7B model: 28 layers, 4.4 GB of Q4 weights, 32k training context,
    /// 56 KiB of KV per token (Qwen2.5-7B's shape).
    fn seven_b() -> ModelShape {
        ModelShape {
            layers: 28,
            weights_bytes: 4_400_000_000,
            ctx_train: 32_768,
            kv_bytes_per_token: 28 * 4 * 256 * 2,
        }
    }

    fn auto() -> OffloadRequest {
        OffloadRequest::default()
    }

    const VULKAN: &[&str] = &["vulkan"];

    #[test]
    fn layer_counts_parse() {
        assert_eq!("auto".parse(), Ok(GpuLayers::Auto));
        assert_eq!("ALL".parse(), Ok(GpuLayers::All));
        assert_eq!("0".parse(), Ok(GpuLayers::Count(0)));
        assert_eq!("33".parse(), Ok(GpuLayers::Count(33)));
        let err = "-1".parse::<GpuLayers>().unwrap_err();
        assert!(err.contains("auto, all, or a number"), "{err}");
    }

    #[test]
    fn a_big_gpu_takes_every_layer_and_the_whole_training_context() {
        let devices = [cpu(16 * GIB), gpu(1, 24 * GIB)];
        let p = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        assert_eq!((p.gpu_layers, p.model_layers, p.n_ctx), (29, 29, 32_768));
        assert_eq!(p.device.as_ref().unwrap().name, "Vulkan0");
        assert_eq!(p.note, None);
        assert_eq!(p.summary(), "29/29 layers on Vulkan0, ctx 32768");
    }

    #[test]
    fn a_gpu_that_holds_the_weights_but_not_the_whole_cache_gets_a_smaller_context() {
        // 6 GiB free: 4.4 GB of weights, 768 MiB reserve, ~0.8 GiB of cache.
        let devices = [cpu(16 * GIB), gpu(1, 6 * GIB)];
        let p = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        assert_eq!(p.gpu_layers, 29);
        assert!(
            (MIN_FIT_CTX..32_768).contains(&p.n_ctx),
            "ctx {} should shrink to fit, not below {MIN_FIT_CTX}",
            p.n_ctx
        );
        assert_eq!(p.n_ctx % CTX_STEP, 0);
        let used = cost_of(&p, &seven_b());
        assert!(used <= 6 * GIB - DEVICE_RESERVE, "plan uses {used} bytes");
    }

    #[test]
    fn a_small_gpu_takes_some_layers_and_says_why_not_all() {
        let devices = [cpu(16 * GIB), gpu(1, 3 * GIB)];
        let p = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        assert!(p.gpu_layers > 0 && p.gpu_layers < 29, "{p:?}");
        assert_eq!(p.n_ctx, MIN_FIT_CTX);
        assert!(p.note.as_deref().unwrap().contains("do not fit"), "{p:?}");
        assert!(cost_of(&p, &seven_b()) <= 3 * GIB - DEVICE_RESERVE);
    }

    #[test]
    fn no_memory_left_on_the_gpu_runs_on_the_cpu_and_says_so() {
        let devices = [cpu(16 * GIB), gpu(1, 500 * MIB)];
        let p = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        assert_eq!((p.device.clone(), p.gpu_layers), (None, 0));
        assert!(p.note.as_deref().unwrap().contains("500 MiB free"), "{p:?}");
        assert!(p.summary().starts_with("CPU, ctx "), "{}", p.summary());
    }

    #[test]
    fn no_gpu_backend_runs_on_the_cpu_and_names_the_rebuild() {
        let p = plan(&auto(), &[cpu(16 * GIB)], &seven_b(), &[]).unwrap();
        assert_eq!(p.gpu_layers, 0);
        assert_eq!(p.n_ctx, 32_768);
        assert!(p.note.unwrap().contains("--features vulkan"));
        // A backend but no device: the driver is the suspect.
        let p = plan(&auto(), &[cpu(16 * GIB)], &seven_b(), VULKAN).unwrap();
        assert!(p.note.unwrap().contains("driver"));
    }

    #[test]
    fn all_on_a_cpu_only_build_still_runs_on_the_cpu() {
        let req = OffloadRequest {
            layers: GpuLayers::All,
            ..auto()
        };
        let p = plan(&req, &[cpu(16 * GIB)], &seven_b(), &[]).unwrap();
        assert_eq!((p.gpu_layers, p.device), (0, None));
    }

    #[test]
    fn zero_layers_is_the_cpu_without_a_note() {
        let req = OffloadRequest {
            layers: GpuLayers::Count(0),
            ..auto()
        };
        let p = plan(&req, &[cpu(16 * GIB), gpu(1, 24 * GIB)], &seven_b(), VULKAN).unwrap();
        assert_eq!((p.gpu_layers, p.device, p.note), (0, None, None));
    }

    #[test]
    fn the_cpu_context_is_capped_and_fitted_to_host_memory() {
        let mut big = seven_b();
        big.ctx_train = 131_072;
        let p = plan(&auto(), &[cpu(64 * GIB)], &big, &[]).unwrap();
        assert_eq!(p.n_ctx, CPU_MAX_CTX);
        // 10 GiB free: half is 5 GiB, 4.4 GB of weights, ~0.9 GiB of cache.
        let p = plan(&auto(), &[cpu(10 * GIB)], &big, &[]).unwrap();
        assert!((MIN_FIT_CTX..CPU_MAX_CTX).contains(&p.n_ctx), "{p:?}");
        // A model smaller than the cap keeps its own context.
        let mut tiny = seven_b();
        tiny.ctx_train = 8192;
        assert_eq!(
            plan(&auto(), &[cpu(12 * GIB)], &tiny, &[]).unwrap().n_ctx,
            8192
        );
    }

    #[test]
    fn counts_beyond_the_model_are_clamped_with_a_note() {
        let req = OffloadRequest {
            layers: GpuLayers::Count(99),
            ..auto()
        };
        let p = plan(&req, &[cpu(16 * GIB), gpu(1, 24 * GIB)], &seven_b(), VULKAN).unwrap();
        assert_eq!(p.gpu_layers, 29);
        assert!(p
            .note
            .unwrap()
            .contains("--gpu-layers 99: the model has 29"));
    }

    #[test]
    fn all_keeps_every_layer_even_when_the_estimate_says_no() {
        let req = OffloadRequest {
            layers: GpuLayers::All,
            ..auto()
        };
        let p = plan(&req, &[cpu(16 * GIB), gpu(1, 3 * GIB)], &seven_b(), VULKAN).unwrap();
        assert_eq!(p.gpu_layers, 29);
        assert_eq!(p.n_ctx, MIN_FIT_CTX);
        assert!(p.note.unwrap().contains("may not fit"));
    }

    #[test]
    fn an_explicit_context_is_kept_and_auto_fits_layers_to_it() {
        let req = OffloadRequest {
            ctx_size: Some(32_768),
            ..auto()
        };
        let p = plan(&req, &[cpu(16 * GIB), gpu(1, 5 * GIB)], &seven_b(), VULKAN).unwrap();
        assert_eq!(p.n_ctx, 32_768);
        assert!(p.gpu_layers < 29);
        assert!(cost_of(&p, &seven_b()) <= 5 * GIB - DEVICE_RESERVE);
    }

    #[test]
    fn the_gpu_with_most_free_memory_is_chosen_unless_one_is_named() {
        let devices = [cpu(16 * GIB), gpu(1, 4 * GIB), gpu(2, 12 * GIB)];
        let p = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        assert_eq!(p.device.unwrap().index, 2);
        let req = OffloadRequest {
            device: Some(1),
            ..auto()
        };
        assert_eq!(
            plan(&req, &devices, &seven_b(), VULKAN)
                .unwrap()
                .device
                .unwrap()
                .index,
            1
        );
    }

    #[test]
    fn a_device_that_does_not_exist_or_is_not_a_gpu_is_an_error_with_the_list() {
        let devices = [cpu(16 * GIB), gpu(1, 4 * GIB)];
        let req = OffloadRequest {
            device: Some(7),
            ..auto()
        };
        let err = plan(&req, &devices, &seven_b(), VULKAN)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no device 7") && err.contains("1 Vulkan0"),
            "{err}"
        );
        let req = OffloadRequest {
            device: Some(0),
            ..auto()
        };
        let err = plan(&req, &devices, &seven_b(), VULKAN)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a GPU") && err.contains("--gpu-layers 0"),
            "{err}"
        );
    }

    #[test]
    fn fallbacks_halve_the_layers_then_use_the_cpu() {
        let devices = [cpu(16 * GIB), gpu(1, 24 * GIB)];
        let first = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        let next = fallbacks(&first, &auto(), &devices, &seven_b());
        assert_eq!(next.len(), 2);
        assert_eq!(next[0].gpu_layers, 14);
        assert!(next[0].device.is_some());
        assert_eq!((next[1].gpu_layers, next[1].device.clone()), (0, None));
        assert!(next[1].note.as_deref().unwrap().contains("Vulkan0"));
        // Nothing to fall back to from the CPU.
        assert!(fallbacks(&next[1], &auto(), &devices, &seven_b()).is_empty());
    }

    #[test]
    fn loading_falls_back_plan_by_plan_and_warns_once() {
        let devices = [cpu(16 * GIB), gpu(1, 24 * GIB)];
        let first = plan(&auto(), &devices, &seven_b(), VULKAN).unwrap();
        let plans = || {
            let mut all = vec![first.clone()];
            all.extend(fallbacks(&first, &auto(), &devices, &seven_b()));
            all
        };
        // A device that takes at most 10 layers: 29 and 14 fail, the CPU loads.
        let mut tried = Vec::new();
        let (_, used, warning) = load_first(plans(), |p| {
            tried.push(p.gpu_layers);
            if p.gpu_layers > 10 {
                Err("out of device memory")
            } else {
                Ok(())
            }
        })
        .unwrap();
        assert_eq!(tried, [29, 14, 0]);
        assert_eq!(used.gpu_layers, 0);
        let warning = warning.unwrap();
        assert!(
            warning.contains("29/29 layers on Vulkan0") && warning.contains("out of device memory"),
            "{warning}"
        );
        // The first plan loading: no warning.
        let (_, used, warning) = load_first(plans(), |_| Ok::<_, String>(())).unwrap();
        assert_eq!((used.gpu_layers, warning), (29, None));
        // The CPU failing too: its error is the answer.
        let err = load_first(plans(), |p| {
            Err::<(), _>(format!("failed at {}", p.gpu_layers))
        });
        assert_eq!(err.unwrap_err(), "failed at 0");
    }

    fn cost_of(p: &Plan, m: &ModelShape) -> u64 {
        u64::from(p.gpu_layers)
            * (m.layer_bytes() + m.kv_layer_bytes_per_token() * u64::from(p.n_ctx))
    }
}
