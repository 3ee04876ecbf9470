//! The environment variables gpu-sph reads, checked before anything else runs: a value that
//! cannot be parsed is refused in one line naming the variable (ignored, it would let a run do
//! something other than what was set).

use crate::Error;

/// wgpu's names for its backends (`wgpu::Backends::from_comma_list`, which skips any other
/// with a log line no one sees).
const BACKENDS: &[&str] = &[
    "vulkan", "vk", "dx12", "d3d12", "metal", "mtl", "opengl", "gles", "gl", "webgpu", "noop",
];

/// Checks every variable gpu-sph or wgpu reads for the run that is set: `GPU_SPH_PROGRESS_SECONDS`
/// (seconds ≥ 0), `GPU_SPH_FAULT_DEVICE_LOSS_AFTER` (a step count, for the fault tests),
/// `WGPU_BACKEND` (a comma list of wgpu's backend names) and `WGPU_POWER_PREF` (low, high,
/// none). `WGPU_ADAPTER_NAME` takes any substring, `RUST_LOG` is env_logger's.
pub(crate) fn check() -> Result<(), Error> {
    check_with(|name| std::env::var_os(name))
}

fn check_with(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), Error> {
    let text = |name: &str| -> Result<Option<String>, Error> {
        match var(name) {
            None => Ok(None),
            Some(v) => v.into_string().map(Some).map_err(|v| {
                Error::input(format!(
                    "environment variable {name}={v:?} is not valid UTF-8: unset it or set it anew"
                ))
            }),
        }
    };
    let bad = |name: &str, value: &str, wants: &str| {
        Error::input(format!(
            "environment variable {name}={value:?} is not {wants}: set it to one, or unset it"
        ))
    };
    if let Some(v) = text("GPU_SPH_PROGRESS_SECONDS")? {
        let ok = v
            .trim()
            .parse::<f64>()
            .is_ok_and(|s| std::time::Duration::try_from_secs_f64(s).is_ok());
        if !ok {
            return Err(bad(
                "GPU_SPH_PROGRESS_SECONDS",
                &v,
                "a number of seconds ≥ 0 (such as 10)",
            ));
        }
    }
    if let Some(v) = text("GPU_SPH_FAULT_DEVICE_LOSS_AFTER")?
        && v.trim().parse::<u64>().is_err()
    {
        return Err(bad(
            "GPU_SPH_FAULT_DEVICE_LOSS_AFTER",
            &v,
            "a step count (a whole number ≥ 0)",
        ));
    }
    if let Some(v) = text("WGPU_BACKEND")? {
        let names: Vec<String> = v.split(',').map(|b| b.trim().to_lowercase()).collect();
        if names.iter().any(|b| !BACKENDS.contains(&b.as_str())) {
            return Err(bad(
                "WGPU_BACKEND",
                &v,
                &format!("a comma list of wgpu's backends ({})", BACKENDS.join(", ")),
            ));
        }
    }
    if let Some(v) = text("WGPU_POWER_PREF")?
        && !["low", "high", "none"].contains(&v.to_lowercase().as_str())
    {
        return Err(bad("WGPU_POWER_PREF", &v, "low, high or none"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<(), Error> {
        check_with(|name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.into())
        })
    }

    #[test]
    fn unparsable_values_are_named_and_good_ones_pass() {
        assert!(with(&[]).is_ok());
        assert!(
            with(&[
                ("GPU_SPH_PROGRESS_SECONDS", "0.5"),
                ("WGPU_BACKEND", "vulkan,GL")
            ])
            .is_ok()
        );
        assert!(with(&[("WGPU_POWER_PREF", "High")]).is_ok());
        for (name, value) in [
            ("GPU_SPH_PROGRESS_SECONDS", "abc"),
            ("GPU_SPH_PROGRESS_SECONDS", "-1"),
            ("GPU_SPH_PROGRESS_SECONDS", "inf"),
            ("GPU_SPH_PROGRESS_SECONDS", "1e30"),
            ("GPU_SPH_FAULT_DEVICE_LOSS_AFTER", "3.5"),
            ("WGPU_BACKEND", "vulkan,cuda"),
            ("WGPU_BACKEND", ""),
            ("WGPU_POWER_PREF", "max"),
        ] {
            let e = with(&[(name, value)]).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(&format!("{value:?}")), "{e}");
        }
    }
}
