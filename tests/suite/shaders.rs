//! GPU-free checks of the WGSL: every stage parses and validates with naga, the WGSL
//! `SimParams` has exactly the members and size of its Rust twin, and the stage table names
//! every stage's shader and CPU twin. The other shared structs' layouts are `tests/suite/layout.rs`'s.

use gpu_sph::params::SimParams;
use gpu_sph::shaders;

fn module(stage_source: &str) -> naga::Module {
    module_with(stage_source, gpu_sph::kernel::Kernel::default())
}

/// The stage built with `kernel` (which only the stages that evaluate the kernel read).
fn module_with(stage_source: &str, kernel: gpu_sph::kernel::Kernel) -> naga::Module {
    let src = shaders::source_with(stage_source, Some(kernel));
    let module =
        naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{e:?}"));
    module
}

/// Every WGSL file under `shaders/` with an entry point, by its name without `.wgsl`: the stages
/// (the other files are parts `shaders::source_with` prepends, and kernels). Read from the
/// folder, so no list of them is kept by hand.
fn stages() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "wgsl") {
                let text = std::fs::read_to_string(&path).unwrap();
                if ["@compute", "@vertex", "@fragment"]
                    .iter()
                    .any(|a| text.contains(a))
                {
                    let name = path.file_stem().unwrap().to_string_lossy().to_string();
                    out.push((name, text));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders"),
        &mut out,
    );
    out.sort();
    assert!(out.len() >= 30, "{} stages under shaders/", out.len());
    out
}

/// Every kernel compiles into every stage that evaluates it, and no other stage reads it.
#[test]
fn every_kernel_builds_every_stage_that_evaluates_it() {
    let mut users = 0;
    for (name, src) in stages() {
        if !shaders::uses_kernel(&src) {
            assert!(!shaders::source(&src).contains("fn kernel_w("), "{name}");
            continue;
        }
        users += 1;
        for kernel in gpu_sph::kernel::Kernel::ALL {
            let m = module_with(&src, kernel);
            assert!(
                m.functions
                    .iter()
                    .any(|(_, f)| f.name.as_deref() == Some("kernel_grad")),
                "{name} with {kernel}"
            );
        }
    }
    // dfsph_density, _galerkin, _rate, _pressure and _accel, and dfsph_integrate, which
    // includes the tank's model for its clamp.
    assert_eq!(users, 6);
}

#[test]
fn every_stage_parses_and_validates() {
    for (name, src) in stages() {
        let m = module(&src);
        assert!(
            m.entry_points
                .iter()
                .any(|e| e.name == name || e.name.starts_with(&name)),
            "{name}.wgsl has no entry point named after its stage"
        );
    }
}

#[test]
fn sim_params_matches_its_rust_twin() {
    let m = module(shaders::HASH);
    let (_, ty) = m
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("SimParams"))
        .expect("SimParams in common.wgsl");
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("SimParams is not a struct")
    };
    assert_eq!(*span as usize, std::mem::size_of::<SimParams>());
    let names: Vec<_> = members.iter().filter_map(|m| m.name.as_deref()).collect();
    assert_eq!(
        names,
        [
            "n",
            "table_size",
            "table_mask",
            "group_size",
            "h",
            "inv_h",
            "h2",
            "inv_h2",
            "density_scale",
            "kernel",
            "planar",
            "_pad1",
            "kernel_a",
            "kernel_b"
        ]
    );
}

/// The stage table: each stage with a shader has an entry point named after it there, and each
/// CPU twin it names is a public function in the file its path names.
#[test]
fn every_stage_names_its_shader_and_its_cpu_twin() {
    use gpu_sph::core::Stage;
    for stage in Stage::ALL {
        if let Some(src) = stage.shader() {
            let m = module(src);
            assert!(
                m.entry_points
                    .iter()
                    .any(|e| e.name.starts_with(stage.name())),
                "{}: its shader has no entry point named after it",
                stage.name()
            );
        }
        let (module_path, function) = stage.cpu_mirror().rsplit_once("::").unwrap();
        // A module is `path.rs` or `path/mod.rs`.
        let base = format!(
            "{}/src/{}",
            env!("CARGO_MANIFEST_DIR"),
            module_path.replace("::", "/")
        );
        let file = [format!("{base}.rs"), format!("{base}/mod.rs")]
            .into_iter()
            .find(|f| std::path::Path::new(f).exists())
            .unwrap_or_else(|| panic!("{}: no module file {base}.rs", stage.name()));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(&format!("pub fn {function}(")),
            "{}: no pub fn {function} in {file}",
            stage.name()
        );
    }
}
