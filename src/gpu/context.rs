//! The GPU context: adapter, device and queue, plus the one readback helper.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Pod;

use crate::{Error, Result};

/// Adapter, device and queue, created once and shared by every pipeline.
pub struct GpuContext {
    /// The chosen adapter.
    pub adapter: wgpu::Adapter,
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says about itself.
    pub info: wgpu::AdapterInfo,
    /// Limits granted to the device (all the adapter offers).
    pub limits: wgpu::Limits,
    /// Whether compute passes can carry timestamp queries.
    pub timestamps: bool,
    /// What the host has mapped from the device: every readback goes through
    /// [`GpuContext::count_mapped`].
    pub mapped: MappedBytes,
    /// Why the device was lost, once it is (set by wgpu's device-lost callback).
    pub lost: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    /// The instance the adapter came from, where this context made it: kept as long as the
    /// device.
    pub instance: Option<wgpu::Instance>,
}

/// Counters of host mappings (the test that a run reads back only its statistics block
/// checks them).
#[derive(Debug, Default)]
pub struct MappedBytes {
    /// Mappings.
    pub maps: AtomicU64,
    /// Bytes in all of them.
    pub bytes: AtomicU64,
    /// The largest one, in bytes.
    pub largest: AtomicU64,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The adapter as one line: name, backend, device type, driver.
pub fn describe(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{} ({:?}, {:?}, driver {} {})",
        info.name, info.backend, info.device_type, info.driver, info.driver_info
    )
}

impl GpuContext {
    /// Creates a headless context. Honours `WGPU_BACKEND` (e.g. `vulkan`, `gl`) and
    /// `WGPU_ADAPTER_NAME` (a case-insensitive substring of the adapter's name).
    pub fn new() -> Result<Self> {
        finish(Self::new_async(), "GpuContext::new_async")
    }

    /// [`GpuContext::new`] without blocking: what a web page awaits (the browser grants the
    /// adapter and the device only once the page yields to it).
    pub async fn new_async() -> Result<Self> {
        let instance = wgpu::Instance::new(without_indirect_validation(
            wgpu::InstanceDescriptor::new_without_display_handle_from_env(),
        ));
        let adapter = pick_adapter(&instance, None).await?;
        let mut ctx = Self::from_adapter(adapter).await?;
        ctx.instance = Some(instance);
        Ok(ctx)
    }

    /// Requests a device from `adapter` with every limit the adapter offers and timestamp
    /// queries where it has them.
    pub async fn from_adapter(adapter: wgpu::Adapter) -> Result<Self> {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let required_features = if timestamps {
            wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("sph.device"),
                required_features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::Device(format!("{e} on {}", describe(&info))))?;
        // wgpu's default handler panics; errors we do not catch in a scope are logged instead,
        // and every operation that can fail on user input runs inside a scope.
        device.on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| {
            log::error!("uncaptured wgpu error: {e}");
        }));
        let lost = std::sync::Arc::new(std::sync::Mutex::new(None));
        let seen = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = seen.lock() {
                *l = Some(if message.is_empty() {
                    format!("{reason:?}")
                } else {
                    format!("{reason:?}: {message}")
                });
            }
        });
        log::info!("GPU adapter: {}", describe(&info));
        log::info!(
            "limits: storage binding {} B, buffer {} B, {} workgroups/dim, {} invocations/workgroup, {} storage buffers/stage; timestamps: {timestamps}",
            limits.max_storage_buffer_binding_size,
            limits.max_buffer_size,
            limits.max_compute_workgroups_per_dimension,
            limits.max_compute_invocations_per_workgroup,
            limits.max_storage_buffers_per_shader_stage,
        );
        Ok(Self {
            adapter,
            device,
            queue,
            info,
            limits,
            timestamps,
            mapped: MappedBytes::default(),
            lost,
            instance: None,
        })
    }

    /// `e`, or [`Error::DeviceLost`] when the device has been lost (then every later
    /// operation fails, and the loss is the cause worth naming).
    pub fn explain(&self, e: Error) -> Error {
        match self.lost.lock().ok().and_then(|l| l.clone()) {
            Some(why) => Error::DeviceLost(format!("{why}; {}", e.to_string().replace('\n', " "))),
            None => e,
        }
    }

    /// Runs `f` inside validation and out-of-memory error scopes and turns any error into
    /// [`Error::Validation`].
    ///
    /// In a web page the scopes' verdicts arrive only once the page yields to the browser, so
    /// there `f` runs without scopes of its own: the page wraps a whole build or run in one pair
    /// it awaits ([`GpuContext::scoped_async`]), and an error outside it reaches the device's
    /// uncaptured-error handler.
    pub fn scoped<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        if cfg!(target_arch = "wasm32") {
            return Ok(f());
        }
        finish(self.scoped_async(f), "GpuContext::scoped_async")
    }

    /// [`GpuContext::scoped`] awaiting the scopes' verdicts (on every target).
    pub async fn scoped_async<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = validation.pop().await;
        let o = oom.pop().await;
        // Out of memory first: an allocation that failed makes every later use of the buffer
        // a validation error, which would hide the cause.
        match (o, v) {
            (Some(e), _) => Err(Error::OutOfMemory(format!(
                "the GPU could not allocate ({})",
                e.to_string().replace('\n', " ")
            ))),
            (None, Some(e)) => Err(Error::Validation(e.to_string().replace('\n', " "))),
            (None, None) => Ok(out),
        }
    }

    /// Copies the first `len` elements of `buffer` to the host. Waits for all submitted work.
    pub fn readback<T: Pod>(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<T>> {
        finish(
            self.readback_async(buffer, len),
            "GpuContext::readback_async",
        )
    }

    /// [`GpuContext::readback`] without blocking (what a web page awaits).
    pub async fn readback_async<T: Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<T>> {
        self.readback_at_async(buffer, 0, len).await
    }

    /// [`GpuContext::readback_async`] of `len` values from byte `offset` (a multiple of 4).
    pub async fn readback_at_async<T: Pod>(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        len: usize,
    ) -> Result<Vec<T>> {
        let size = (len * std::mem::size_of::<T>()) as u64;
        if size == 0 {
            return Ok(Vec::new());
        }
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sph.readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sph.readback"),
            });
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, size);
        let bytes = self.submit_and_read_async(encoder, &staging).await?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Records a mapping of `bytes` bytes.
    pub fn count_mapped(&self, bytes: u64) {
        let m = &self.mapped;
        m.maps.fetch_add(1, Ordering::Relaxed);
        m.bytes.fetch_add(bytes, Ordering::Relaxed);
        m.largest.fetch_max(bytes, Ordering::Relaxed);
    }

    /// Submits `encoder`, which fills `staging` (a `MAP_READ` buffer), waits for it and returns
    /// the staging buffer's bytes.
    pub fn submit_and_read(
        &self,
        encoder: wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> Result<Vec<u8>> {
        finish(
            self.submit_and_read_async(encoder, staging),
            "GpuContext::submit_and_read_async",
        )
    }

    /// [`GpuContext::submit_and_read`] without blocking: on native targets the device is
    /// polled until the mapping is done (the future is then ready when first polled); in a web
    /// page the browser maps the buffer once the page yields, which awaiting it does.
    pub async fn submit_and_read_async(
        &self,
        encoder: wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> Result<Vec<u8>> {
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait().map_err(|e| Error::Map(e.to_string()))?;
        rx.await
            .map_err(|e| Error::Map(e.to_string()))?
            .map_err(|e| Error::Map(e.to_string()))?;
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| Error::Map(e.to_string()))?;
        let out = view.to_vec();
        drop(view);
        staging.unmap();
        self.count_mapped(out.len() as u64);
        Ok(out)
    }

    /// Submits `encoder` and waits until the device is idle.
    /// In a web page it only submits: nothing there waits, and a later readback is ordered
    /// after the work anyway.
    pub fn submit_and_wait(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.queue.submit([encoder.finish()]);
        self.wait()
    }

    /// Waits until the device is idle (native targets; nothing in a web page, whose device is
    /// polled by the browser).
    pub fn wait(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Device(e.to_string()))?;
        Ok(())
    }

    /// Builds a compute shader module from `shaders/common.wgsl` followed by `stage_source`,
    /// a stage that does not evaluate the run's kernel.
    pub fn shader(&self, label: &str, stage_source: &str) -> wgpu::ShaderModule {
        self.walking_shader(label, stage_source, crate::core::limits::GROUP, None)
    }

    /// [`GpuContext::shader`] with walkers of `members` particles (the density group size:
    /// 1 in crowded tables, where the grouped walk's other members would repeat the first),
    /// and the run's `kernel` for a stage that evaluates it ([`crate::shaders::source_with`]).
    pub fn walking_shader(
        &self,
        label: &str,
        stage_source: &str,
        members: u32,
        kernel: Option<crate::kernel::Kernel>,
    ) -> wgpu::ShaderModule {
        let source = crate::shaders::source_for(stage_source, members, kernel);
        self.device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
    }
}

/// A result still to come (a readback the browser completes once the page yields): what a
/// trait method that may read the GPU returns, so a web page can await it where a native
/// caller blocks on it with [`finish`].
pub type Pending<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T>> + 'a>>;

/// Runs `fut` to its end. On native targets it blocks until then. In a web page nothing may
/// block and a GPU readback completes only once the page yields to the browser: there `fut` is
/// polled once, and one still waiting is refused, naming `instead`, the asynchronous form the
/// page awaits.
pub fn finish<T>(fut: impl Future<Output = Result<T>>, instead: &str) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = instead;
        pollster::block_on(fut)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => Err(Error::Map(format!(
                "a web page cannot wait for the GPU here: this needs {instead}, awaited"
            ))),
        }
    }
}

/// `desc` without wgpu's indirect-call validation, unless `WGPU_VALIDATION_INDIRECT_CALL` is
/// set (then as it says). wgpu-core runs that validation as one extra dispatch and two buffer
/// barriers before every indirect dispatch, to turn arguments past
/// `max_compute_workgroups_per_dimension` into no-ops; a DFSPH step issues about 600 indirect
/// dispatches (most of them empty once a solve has converged). gpu-sph's indirect arguments are
/// all written by its own passes and bounded by construction: x is ceil(N / 256) workgroups or
/// fewer (N within [`capacity`](crate::grid::gpu::capacity), which keeps ceil(N / 256) within
/// the limit) or 0, y and z are 1. Measured on an NVIDIA H200: see docs/benchmarks.md.
pub fn without_indirect_validation(mut desc: wgpu::InstanceDescriptor) -> wgpu::InstanceDescriptor {
    if std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
        desc.flags
            .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    }
    desc
}

/// Picks the adapter: the first whose name contains `WGPU_ADAPTER_NAME` when that is set,
/// otherwise wgpu's choice for `surface`.
pub async fn pick_adapter(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<wgpu::Adapter> {
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| {
                a.get_info().name.to_lowercase().contains(&wanted.to_lowercase())
                    && surface.is_none_or(|s| a.is_surface_supported(s))
            })
            .ok_or_else(|| {
                Error::NoAdapter(format!(
                    "no GPU adapter matches WGPU_ADAPTER_NAME={wanted:?} (found: {}); unset it or pick one of those",
                    if names.is_empty() { "none".to_string() } else { names.join(", ") }
                ))
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: surface,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| {
            // wgpu reads WGPU_BACKEND itself, and a name it does not know selects nothing.
            let backend = match std::env::var("WGPU_BACKEND") {
                Ok(b) => format!(
                    "; WGPU_BACKEND={b:?} chose the backends tried: unset it or set it to vulkan"
                ),
                Err(_) => String::new(),
            };
            Error::NoAdapter(format!("no usable GPU adapter ({e}){backend}"))
        })
}
