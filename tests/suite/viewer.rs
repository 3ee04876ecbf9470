//! The viewer end to end, through the binary: a real window under Xvfb on lavapipe, the
//! offscreen `--headless --screenshot` path, and the errors a user meets without a display.
//!
//! With `GPU_SPH_REQUIRE_GPU=1` (set by `.ci/run`) a missing Xvfb or GPU fails these tests
//! instead of skipping them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_gpu-sph");

fn required() -> bool {
    std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() == Ok("1")
}

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::tmp_dir().join(name)
}

fn runtime_dir() -> PathBuf {
    let dir = scratch("xdg");
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    dir
}

/// A private X server, killed on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Xvfb on a free display (it picks one and tells us through `-displayfd`), or `None`
/// when Xvfb is not installed and not required.
fn xvfb() -> Option<Xvfb> {
    let spawned = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "800x600x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            assert!(
                !required(),
                "GPU_SPH_REQUIRE_GPU=1 but Xvfb cannot start: {e} (apt-get install xvfb)"
            );
            eprintln!("SKIPPED: Xvfb not available ({e})");
            return None;
        }
    };
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let display = format!(":{}", line.trim());
    assert!(line.trim().parse::<u32>().is_ok(), "Xvfb printed {line:?}");
    Some(Xvfb { child, display })
}

/// True (said on stderr) when a run failed for want of a GPU adapter and the GPU is not
/// required: the test is skipped.
fn skipped_for_want_of_an_adapter(out: &Output) -> bool {
    let skip = !out.status.success()
        && !required()
        && String::from_utf8_lossy(&out.stderr).contains("adapter");
    if skip {
        eprintln!("SKIPPED: no GPU adapter");
    }
    skip
}

fn run(args: &[&str], display: Option<&str>) -> Output {
    run_on(args, display, None)
}

/// [`run`] with `WGPU_BACKEND` set to `backend` where given.
fn run_on(args: &[&str], display: Option<&str>, backend: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    if let Some(b) = backend {
        cmd.env("WGPU_BACKEND", b);
    }
    cmd.args(args)
        .env("XDG_RUNTIME_DIR", runtime_dir())
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("DISPLAY");
    if let Some(d) = display {
        cmd.env("DISPLAY", d);
    }
    cmd.output().unwrap()
}

/// Pixels that are clearly coloured (particles through the colour map), as opposed to the
/// dark background and the grey tank and grid lines; and how many distinct colours they have.
fn coloured_pixels(path: &Path) -> (usize, usize) {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    let mut colours = std::collections::HashSet::new();
    let mut count = 0;
    for p in img.pixels() {
        let [r, g, b, _] = p.0;
        let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
        if hi >= 40 && hi - lo >= 30 {
            count += 1;
            colours.insert([r, g, b]);
        }
    }
    (count, colours.len())
}

fn assert_shows_particles(out: &Output, path: &Path) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (count, colours) = coloured_pixels(path);
    assert!(
        count >= 2000,
        "only {count} coloured pixels in {}",
        path.display()
    );
    assert!(colours > 1, "the particles have a single colour");
}

/// The background alone has no coloured pixels, so the check above can fail.
#[test]
fn an_empty_frame_fails_the_particle_check() {
    let path = scratch("empty.png");
    image::RgbaImage::from_pixel(64, 48, image::Rgba([5, 5, 6, 255]))
        .save(&path)
        .unwrap();
    assert_eq!(coloured_pixels(&path), (0, 0));
}

/// Runs the window under a private Xvfb with `args` after `--screenshot FILE`, and checks the
/// picture.
fn window_shows_particles(name: &str, args: &[&str]) {
    let Some(x) = xvfb() else { return };
    let path = scratch(name);
    let mut all = vec!["--screenshot", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(&all, Some(&x.display));
    assert_shows_particles(&out, &path);
}

/// Runs `--headless --screenshot FILE --frames 3 --hide-ui` with `args` (the offscreen
/// viewer) and checks the picture; the picture's path, or `None` without an adapter.
fn offscreen_shows_particles(name: &str, args: &[&str]) -> Option<PathBuf> {
    offscreen_shows_particles_after(name, "3", args)
}

/// [`offscreen_shows_particles`] after `frames` frames.
fn offscreen_shows_particles_after(name: &str, frames: &str, args: &[&str]) -> Option<PathBuf> {
    let path = scratch(name);
    let mut all = vec![
        "--headless",
        "--screenshot",
        path.to_str().unwrap(),
        "--frames",
        frames,
        "--hide-ui",
    ];
    all.extend_from_slice(args);
    let out = run(&all, None);
    if skipped_for_want_of_an_adapter(&out) {
        return None;
    }
    assert_shows_particles(&out, &path);
    Some(path)
}

#[test]
fn window_renders_saves_a_screenshot_and_survives_a_zero_size() {
    window_shows_particles(
        "window.png",
        &[
            "--frames",
            "3",
            "-n",
            "4000",
            "--window-size",
            "480x320",
            "--hide-ui",
            "--exercise-resize",
            "--gpu",
        ],
    );
}

#[test]
fn window_stepping_on_the_cpu_path_renders_too() {
    window_shows_particles(
        "window-cpu.png",
        &[
            "--frames",
            "3",
            "-n",
            "4000",
            "--window-size",
            "480x320",
            "--hide-ui",
            "--cpu",
        ],
    );
}

#[test]
fn window_with_the_panel_open_renders_too() {
    window_shows_particles(
        "window-ui.png",
        &[
            "--frames",
            "2",
            "-n",
            "2000",
            "--window-size",
            "640x480",
            "--colour-by",
            "pressure",
        ],
    );
}

#[test]
fn the_viewer_steps_dfsph_on_both_paths() {
    for path in ["--gpu", "--cpu"] {
        let png = scratch(&format!("dfsph{path}.png"));
        let out = run(
            &[
                "--headless",
                "--solver",
                "dfsph",
                "--screenshot",
                png.to_str().unwrap(),
                "--frames",
                "3",
                "-n",
                "2000",
                "--window-size",
                "400x300",
                "--hide-ui",
                "--colour-by",
                "density",
                "--timings",
                path,
            ],
            None,
        );
        if skipped_for_want_of_an_adapter(&out) {
            return;
        }
        assert_shows_particles(&out, &png);
    }
}

#[test]
fn headless_screenshot_renders_offscreen() {
    let args = [
        "-n",
        "4000",
        "--window-size",
        "400x300",
        "--colour-by",
        "density",
        "--gpu",
    ];
    let Some(path) = offscreen_shows_particles("headless.png", &args) else {
        return;
    };
    let img = image::open(&path).unwrap();
    assert_eq!((img.width(), img.height()), (400, 300));
}

/// A scene file whose run section sets an end time (the Galton board's 1.2 s) still pictures
/// the viewer with `--headless --screenshot`: only --steps or --end-time on the command line
/// make a headless run (which has no viewer to picture). It was refused with "drop --steps",
/// naming a flag that was not given.
#[test]
fn a_grains_scene_with_a_run_section_pictures_the_viewer() {
    let scene = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/examples/galton-board.json"
    );
    let args = ["--scene", scene, "--window-size", "640x480"];
    offscreen_shows_particles("galton.png", &args);
}

#[test]
fn the_camera_flags_move_the_view() {
    // The same frame from the default framing and from straight above: a different picture.
    let shot = |name: &str, extra: &[&str]| {
        let path = scratch(name);
        let mut args = vec![
            "--headless",
            "--screenshot",
            path.to_str().unwrap(),
            "--frames",
            "1",
            "--scene",
            "cube",
            "-n",
            "2000",
            "--window-size",
            "320x240",
            "--hide-ui",
        ];
        args.extend_from_slice(extra);
        let out = run(&args, None);
        (out, path)
    };
    let (out, default) = shot("camera-default.png", &[]);
    if skipped_for_want_of_an_adapter(&out) {
        return;
    }
    assert_shows_particles(&out, &default);
    let (out, above) = shot(
        "camera-above.png",
        &["--camera-pitch", "89", "--camera-yaw", "0"],
    );
    assert_shows_particles(&out, &above);
    let (a, b) = (image::open(&default).unwrap(), image::open(&above).unwrap());
    assert_ne!(a.as_bytes(), b.as_bytes(), "the camera did not move");
}

#[test]
fn without_a_display_the_window_says_so_and_suggests_headless() {
    let out = run(&["-n", "100"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--headless"), "{err}");
}

#[test]
fn a_screenshot_that_is_not_png_is_refused_before_any_work() {
    let out = run(&["--headless", "--screenshot", "shot.jpg"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".png"), "{err}");
}

#[test]
fn bad_viewer_flags_are_refused_in_one_line() {
    // A directory that cannot be made: below a plain file.
    let blocker = scratch("blocker");
    std::fs::write(&blocker, "").unwrap();
    let below = blocker.join("shot.png");
    for args in [
        &["--headless", "--screenshot", below.to_str().unwrap()][..],
        &["--headless", "--screenshot", "x.png", "--frames", "0"],
        &["--headless", "--screenshot", "x.png", "--substeps", "0"],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--window-size",
            "0x10",
        ],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--window-size",
            "big",
        ],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--colour-by",
            "vorticity",
        ],
        &["--present-mode", "vsync"],
        &["--headless", "--screenshot", "x.png", "--cpu", "--gpu"],
        &["--screenshot", "x.png", "--stats", "s.csv"],
        &[
            "--headless",
            "--steps",
            "2",
            "--screenshot",
            below.to_str().unwrap(),
        ],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--camera-pitch",
            "95",
        ],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--camera-distance",
            "0",
        ],
        &["--headless", "--screenshot", "x.png", "--camera-yaw", "nan"],
        &[
            "--headless",
            "--screenshot",
            "x.png",
            "--camera-target",
            "1,2",
        ],
    ] {
        let out = run(args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn steps_without_headless_is_refused() {
    let out = run(&["--steps", "10"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--headless"));
}

/// Pixels of the water surface: clearly blue against the grey background and tank lines.
fn water_pixels(img: &image::RgbaImage) -> usize {
    img.pixels()
        .filter(|p| {
            let [r, _, b, _] = p.0;
            b >= 60 && b as i32 - r as i32 >= 25
        })
        .count()
}

/// The sphere image's particles (saturated pixels, where the background and the tank lines are
/// grey), eroded by `margin` pixels so the mask lies inside the fluid's silhouette in both
/// images.
fn inner_silhouette(img: &image::RgbaImage, margin: i64) -> Vec<bool> {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let coloured = |x: i64, y: i64| {
        if x < 0 || y < 0 || x >= w || y >= h {
            return false;
        }
        let [r, g, b, _] = img.get_pixel(x as u32, y as u32).0;
        r.max(g).max(b) - r.min(g).min(b) >= 16
    };
    let mut mask = vec![false; (w * h) as usize];
    for y in 0..h {
        for x in 0..w {
            mask[(y * w + x) as usize] =
                (-margin..=margin).all(|dy| (-margin..=margin).all(|dx| coloured(x + dx, y + dy)));
        }
    }
    mask
}

/// Pixels inside `mask` whose luminance gradient (central differences, |∂x| + |∂y|, 0–255
/// scale) exceeds a fixed threshold.
fn edge_pixels(img: &image::RgbaImage, mask: &[bool]) -> usize {
    let w = img.width() as i64;
    let lum = |x: i64, y: i64| {
        let [r, g, b, _] = img.get_pixel(x as u32, y as u32).0;
        0.299 * r as f32 + 0.587 * g as f32 + 0.114 * b as f32
    };
    let mut count = 0;
    for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
        let (x, y) = (i as i64 % w, i as i64 / w);
        if x == 0 || y == 0 || x + 1 >= w || y + 1 >= img.height() as i64 {
            continue;
        }
        let g = (lum(x + 1, y) - lum(x - 1, y)).abs() + (lum(x, y + 1) - lum(x, y - 1)).abs();
        if g > 24.0 {
            count += 1;
        }
    }
    count
}

/// The image of the resting cube scene after one step, in `mode`: offscreen, or in a window
/// on `display`.
fn cube_frame(mode: &str, display: Option<&str>) -> Option<image::RgbaImage> {
    let path = scratch(&format!("cube-{mode}-{}.png", display.is_some()));
    let mut args = vec![
        "--screenshot",
        path.to_str().unwrap(),
        "--scene",
        "cube",
        "-n",
        "8000",
        "--frames",
        "1",
        "--substeps",
        "1",
        "--window-size",
        "480x360",
        "--hide-ui",
        "--render",
        mode,
    ];
    if display.is_none() {
        args.push("--headless");
    }
    let out = run(&args, display);
    if skipped_for_want_of_an_adapter(&out) {
        return None;
    }
    assert!(
        out.status.success(),
        "{mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(image::open(&path).unwrap().to_rgba8())
}

/// The surface image differs from the sphere image of the same frame and is smooth inside the
/// fluid: at most half as many edge pixels as the spheres have there.
fn check_surface_against_spheres(display: Option<&str>) {
    let (Some(spheres), Some(surface)) = (
        cube_frame("spheres", display),
        cube_frame("surface", display),
    ) else {
        return;
    };
    let differing = spheres
        .pixels()
        .zip(surface.pixels())
        .filter(|(a, b)| a.0.iter().zip(b.0).any(|(x, y)| x.abs_diff(y) > 16))
        .count();
    assert!(differing > 5000, "only {differing} pixels differ");
    assert!(
        water_pixels(&surface) > 5000,
        "no water in the surface image"
    );
    let mask = inner_silhouette(&spheres, 3);
    let inside = mask.iter().filter(|m| **m).count();
    assert!(inside > 5000, "the fluid covers only {inside} pixels");
    let (e_spheres, e_surface) = (edge_pixels(&spheres, &mask), edge_pixels(&surface, &mask));
    eprintln!("inside {inside} px: edge pixels spheres {e_spheres}, surface {e_surface}");
    // The sphere image is full of edges, so the check below can fail.
    assert!(
        e_spheres > inside / 10,
        "{e_spheres} sphere edges in {inside}"
    );
    assert!(
        2 * e_surface <= e_spheres,
        "the surface has {e_surface} edge pixels inside the fluid, the spheres {e_spheres}"
    );
}

#[test]
fn the_surface_differs_from_the_spheres_and_is_smooth_inside() {
    check_surface_against_spheres(None);
}

#[test]
fn in_a_window_too_the_surface_differs_from_the_spheres_and_is_smooth() {
    let Some(x) = xvfb() else { return };
    check_surface_against_spheres(Some(&x.display));
}

#[test]
fn the_surface_in_a_window_survives_a_zero_size() {
    let Some(x) = xvfb() else { return };
    let path = scratch("window-surface.png");
    let out = run(
        &[
            "--screenshot",
            path.to_str().unwrap(),
            "--render",
            "surface",
            "--frames",
            "3",
            "-n",
            "4000",
            "--window-size",
            "480x320",
            "--hide-ui",
            "--exercise-resize",
        ],
        Some(&x.display),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = image::open(&path).unwrap().to_rgba8();
    assert!(water_pixels(&img) > 1000, "no water in the window's image");
}

#[test]
fn a_run_ends_with_a_picture_of_its_last_frame() {
    let path = scratch("last-frame.png");
    let out = run(
        &[
            "--headless",
            "--cpu",
            "-n",
            "3000",
            "--steps",
            "20",
            "--screenshot",
            path.to_str().unwrap(),
            "--window-size",
            "400x300",
        ],
        None,
    );
    if skipped_for_want_of_an_adapter(&out) {
        return;
    }
    assert_shows_particles(&out, &path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("after 20 steps"), "{stdout}");
    assert!(stdout.contains(path.to_str().unwrap()), "{stdout}");
}

#[test]
fn a_run_without_an_adapter_says_why_there_is_no_picture() {
    let path = scratch("no-picture.png");
    let out = Command::new(BIN)
        .args([
            "--headless",
            "-n",
            "300",
            "--steps",
            "2",
            "--screenshot",
            path.to_str().unwrap(),
        ])
        .env("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere")
        .env("RUST_LOG", "off")
        .env("XDG_RUNTIME_DIR", runtime_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!path.exists());
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].contains("CPU path"), "{stderr}");
    assert!(lines[1].contains("no picture"), "{stderr}");
}

/// A diverging run in the viewer pauses with the headless run's one-line message (the
/// offscreen viewer prints the panel's status at exit), on both stepping paths.
#[test]
fn the_viewer_pauses_a_diverging_run_with_the_same_message() {
    for path in ["--cpu", "--gpu"] {
        let png = scratch(&format!("diverged{path}.png"));
        let out = run(
            &[
                "--headless",
                "--screenshot",
                png.to_str().unwrap(),
                "--frames",
                "20",
                "-n",
                "2000",
                "--window-size",
                "200x150",
                "--solver",
                "wcsph",
                "--sound-speed",
                "0.3",
                path,
            ],
            None,
        );
        if skipped_for_want_of_an_adapter(&out) {
            return;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{path}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.contains("diverged"))
            .unwrap_or_else(|| panic!("{path}: no divergence line: {stderr}"));
        assert!(
            line.contains("speed") && line.contains("at particle") && line.contains("paused"),
            "{line}"
        );
    }
}

/// On wgpu's GL backend (Mesa's GL driver and no Vulkan one: many containers, CI images and WSL
/// set-ups) a picture either shows particles or the run says in one line why there is none and
/// exits 2, never an empty picture with exit 0. `.ci/run` installs Mesa's GL driver, so there
/// (`GPU_SPH_REQUIRE_GPU=1`) the picture is required.
fn gl_draws_or_says_why(name: &str, args: &[&str], display: Option<&str>) {
    let path = scratch(name);
    let _ = std::fs::remove_file(&path);
    let mut all = vec!["--screenshot", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run_on(&all, display, Some("gl"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || required() {
        assert_shows_particles(&out, &path);
    } else {
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(!path.exists(), "a refused picture was written");
    }
}

/// The README's first command (smaller and shorter) on GL.
#[test]
fn the_readme_command_on_gl_draws_particles_or_says_why() {
    gl_draws_or_says_why(
        "gl-headless.png",
        &["--headless", "-n", "3000", "--end-time", "0.05"],
        None,
    );
}

/// The viewer's window on GL, with its panel open.
#[test]
fn the_window_on_gl_draws_particles_or_says_why() {
    let Some(x) = xvfb() else { return };
    gl_draws_or_says_why(
        "gl-window.png",
        &["--frames", "3", "-n", "3000", "--window-size", "640x400"],
        Some(&x.display),
    );
}

/// Grey pixels, as the obstacles are drawn (lit grey spheres; the background is darker and
/// the particles coloured).
fn grey_pixels(path: &Path) -> usize {
    let img = image::open(path).unwrap().to_rgba8();
    img.pixels()
        .filter(|p| {
            let [r, g, b, _] = p.0;
            let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
            hi >= 70 && hi - lo < 25
        })
        .count()
}

/// The Galton board's pegs and bins are drawn: its picture has thousands more grey pixels than
/// the same board with its obstacles taken out of the file.
#[test]
fn the_galton_board_shows_its_pegs_and_bins() {
    let scene = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/examples/galton-board.json"
    );
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scene).unwrap()).unwrap();
    file["obstacles"] = serde_json::json!([]);
    let bare = scratch("galton-bare.json");
    std::fs::write(&bare, file.to_string()).unwrap();
    let rest = ["--window-size", "640x480"];
    let mut with = vec!["--scene", scene];
    with.extend(rest);
    let mut without = vec!["--scene", bare.to_str().unwrap()];
    without.extend(rest);
    let Some(a) = offscreen_shows_particles_after("galton-pegs.png", "1", &with) else {
        return;
    };
    let b = offscreen_shows_particles_after("galton-bare.png", "1", &without).unwrap();
    let (grey_with, grey_without) = (grey_pixels(&a), grey_pixels(&b));
    assert!(
        grey_with > grey_without + 3000,
        "{grey_with} grey pixels with the obstacles, {grey_without} without"
    );
}

/// The mean height in the picture of the coloured (sphere) pixels, in pixels from the top.
fn coloured_mean_row(path: &Path) -> f64 {
    let img = image::open(path).unwrap().to_rgba8();
    let (mut sum, mut n) = (0.0, 0usize);
    for (_, y, p) in img.enumerate_pixels() {
        let [r, g, b, _] = p.0;
        let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
        if hi >= 40 && hi - lo >= 30 {
            sum += y as f64;
            n += 1;
        }
    }
    sum / n.max(1) as f64
}

/// Grains in the viewer move at a watchable pace: their substeps are sized to the simulated
/// time per frame, so within 30 frames the poured spheres have visibly fallen (it was two
/// substeps of a few µs a frame, and nothing moved in 60).
#[test]
fn a_grains_viewer_run_moves_the_spheres_within_30_frames() {
    let common = ["--model", "grains", "-n", "600", "--window-size", "480x360"];
    let shot = |name: &str, frames: &str| offscreen_shows_particles_after(name, frames, &common);
    let Some(first) = shot("grains-1.png", "1") else {
        return;
    };
    let later = shot("grains-30.png", "30").unwrap();
    let (y0, y1) = (coloured_mean_row(&first), coloured_mean_row(&later));
    assert!(
        y1 > y0 + 10.0,
        "the spheres' mean row went from {y0} to {y1}"
    );
}
