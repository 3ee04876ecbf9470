//! What the fluid and the grains front ends share: the path a run computes on (and what draws
//! its picture), and the printing of reports as tables or JSON.

use std::sync::Arc;

use crate::gpu::GpuContext;
use crate::{Error, verify};

use super::Outcome;
use super::cli::Cli;

/// Where a headless run computes, and what draws its picture.
pub(crate) struct Paths {
    /// The GPU path's context; `None`: the CPU path.
    pub(crate) compute: Option<Arc<GpuContext>>,
    /// A context for the picture, or why there is none.
    pub(crate) picture: std::result::Result<Arc<GpuContext>, String>,
}

/// Picks the path: `--cpu` and `--gpu` decide; otherwise the GPU path on a real GPU, and the
/// CPU path (said in one line) on a software adapter or without one, where it is faster or the
/// only one. `--verify` and `--bench` always run the GPU (they compare both paths).
pub(crate) fn choose_paths(cli: &Cli) -> Result<Paths, Error> {
    if cli.cpu {
        let picture = match &cli.screenshot {
            Some(_) => GpuContext::new().map(Arc::new).map_err(|e| e.to_string()),
            None => Err("no picture asked for".into()),
        };
        return Ok(Paths {
            compute: None,
            picture,
        });
    }
    let forced = cli.gpu || cli.verify || cli.bench;
    match GpuContext::new() {
        Ok(ctx) => {
            let ctx = Arc::new(ctx);
            if !forced && ctx.info.device_type == wgpu::DeviceType::Cpu {
                eprintln!(
                    "gpu-sph: {} is a software renderer, so this run takes the CPU path, which is faster here (--gpu forces the GPU path)",
                    ctx.info.name
                );
                return Ok(Paths {
                    compute: None,
                    picture: Ok(ctx),
                });
            }
            Ok(Paths {
                compute: Some(ctx.clone()),
                picture: Ok(ctx),
            })
        }
        Err(e) if !forced => {
            let why = e.to_string();
            eprintln!(
                "gpu-sph: no usable GPU adapter, so this run takes the CPU path ({})",
                why.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            Ok(Paths {
                compute: None,
                picture: Err(why),
            })
        }
        Err(e) => Err(e),
    }
}

/// Prints `value` as one JSON object with `--json`, else the text `table` makes.
pub(crate) fn print_json_or<T: serde::Serialize>(
    cli: &Cli,
    value: &T,
    table: impl FnOnce() -> String,
) -> Result<(), Error> {
    if cli.json {
        println!(
            "{}",
            serde_json::to_string(value).map_err(|e| Error::input(e.to_string()))?
        );
    } else {
        println!("{}", table());
    }
    Ok(())
}

/// Prints a verification report (table or JSON) and maps its verdict to the outcome.
pub(crate) fn print_report(cli: &Cli, report: &verify::Report) -> Result<Outcome, Error> {
    print_json_or(cli, report, || report.to_table())?;
    Ok(if report.pass {
        Outcome::Done
    } else {
        Outcome::VerifyFailed
    })
}
