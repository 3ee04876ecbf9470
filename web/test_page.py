"""The page in headless Chromium: runs the dam break on the browser's WebGPU and checks what it
reports against the native command line's CPU reference path.

    python web/test_page.py PAGE_DIR GPU_SPH [N] [K]

PAGE_DIR is what `scripts/web.sh build PAGE_DIR` wrote; GPU_SPH the native binary. Needs
Debian's `chromium` and PyPI's `playwright` (its Python package only: it drives the system
browser). Without a GPU Chromium's WebGPU runs on SwiftShader, a CPU implementation.

Checks, each failing with a line that says what differed, from one page run
`?scene=dam-break&n=N&steps=K&verify=1&frame=1&report=1` (its shaders compile once: on
SwiftShader that is most of the run's time):
  1. The run reached step K with finite statistics, and its density statistics equal the
     native CPU path's for the same scene, N and K (bit for bit, or within 1e-5 relative, the
     verify tolerance off lavapipe; the line says which held).
  2. The page's stage-by-stage check of its GPU against the CPU mirror compiled into the same
     wasm (`verify=1`, the K steps from the start) passes.
  3. A frame drawn into a texture and read back shows particles (a headless canvas reads back
     blank, so the page draws into a texture).
  4. A browser without WebGPU gets one line saying so, never a blank page (checked first).
  5. The viewer (`view=1`, the panel hidden) steps and draws frames, its third read back
     showing particles (`offscreen=1`: drawn into a texture, not the canvas; its own page run).
  6. A scene file and the mesh it names dropped onto the page, as a visitor gives them (the
     page puts them into the form's file input): a block thrown at the tank's two open sides and into an obstacle read from
     an OBJ file runs as `--scene` runs it, its particles removed as they leave; after 60
     steps its particle and leaver counts equal the native CPU path's and some have left, its
     density statistics as in check 1.
"""

import functools
import http.server
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from playwright.sync_api import sync_playwright

ARGS = [
    "--headless=new",
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",
]
DENSITY = ["density_min", "density_mean", "density_max"]


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves the page without a log line per request."""

    def log_message(self, *args):
        pass


def serve(directory):
    handler = functools.partial(Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


# A block thrown at the tank's open side (x+) and top (y+), into a cube obstacle (CUBE_OBJ, a
# mesh file chosen with the scene) that turns part of it back.
SPILLING = """{
  "tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.1], "open": ["x+", "y+"]},
  "fluid": [{"shape": {"box": {"min": [0.18, 0, 0], "max": [0.28, 0.1, 0.1]}},
             "velocity": [3.0, 2.0, 0]}],
  "obstacles": [{"shape": {"mesh": {"file": "cube.obj", "scale": 0.06,
                                    "translation": [0.2, 0.13, 0.02]}}}],
  "physics": {"spacing": 0.01}
}"""
CUBE_OBJ = "\n".join(
    [f"v {x} {y} {z}" for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    + ["f 1 3 4", "f 1 4 2", "f 5 6 8", "f 5 8 7", "f 1 2 6", "f 1 6 5",
       "f 3 7 8", "f 3 8 4", "f 1 5 7", "f 1 7 3", "f 2 4 8", "f 2 8 6"]) + "\n"


def page_report(browser, url, timeout_s, no_webgpu=False, act=None):
    """Opens `url`, runs `act(page)` (a visitor's clicks) if given, and waits for #report."""
    page = browser.new_page()
    if no_webgpu:
        page.add_init_script("Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined });")
    lines = []
    page.on("console", lambda m: lines.append(m.text))
    page.goto(url)
    if act:
        act(page)
    page.wait_for_selector("#report[data-state]", state="attached", timeout=timeout_s * 1000)
    state = page.get_attribute("#report", "data-state")
    report = json.loads(page.text_content("#report"))
    status = page.text_content("#status")
    page.close()
    return state, report, status, lines


def finished_report(browser, url, timeout_s, what, act=None):
    """The report of a page run that must end `done`; a failure names the run and its error."""
    state, report, _, console = page_report(browser, url, timeout_s, act=act)
    if state != "done":
        fail(f"the {what} run ended in {state}: {report.get('error')} (console: {console[-5:]})")
    return report


def same_densities(st, ref):
    """How the page's density statistics `st` equal the native `ref` (fails if they do not)."""
    exact = all(st[key] == ref[key] for key in DENSITY)
    worst = max(abs(st[key] - ref[key]) / abs(ref[key]) for key in DENSITY)
    if not exact and worst > 1e-5:
        fail(f"density statistics differ from the native CPU path by {worst:.3e} relative: "
             + ", ".join(f"{key} {st[key]!r} vs {ref[key]!r}" for key in DENSITY))
    return "bit for bit" if exact else f"within {worst:.2e} relative (not bit for bit)"


def native_last(cli, *args):
    """The last `--stats` row of a native CPU-path run."""
    out = subprocess.run([cli, "--headless", "--cpu", *args, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["last"]


def fail(msg):
    print(f"web test: FAIL: {msg}")
    sys.exit(1)


def main():
    page_dir, cli = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    ref = native_last(cli, "-n", str(n), "--steps", str(k))
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "cube.obj"), "w") as f:
            f.write(CUBE_OBJ)
        with open(os.path.join(d, "spill.json"), "w") as f:
            f.write(SPILLING)
        spill_ref = native_last(cli, "--scene", os.path.join(d, "spill.json"), "-n", "1000",
                                "--steps", "60")
    server, base = serve(page_dir)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("no chromium on PATH (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)

        state, _, status, _ = page_report(browser, base, 60, no_webgpu=True)
        if state != "error" or "WebGPU" not in status or "\n" in status.strip():
            fail(f"a browser without WebGPU saw {status!r}")
        print(f"web test: without WebGPU the page says: {status}")

        r = finished_report(
            browser, f"{base}?scene=dam-break&n={n}&steps={k}&verify=1&frame=1&report=1", 1200,
            "report")
        st = r["stats"]
        print(f"web test: {r['steps']} steps of {n} particles on {r['adapter']['name']} "
              f"({r['adapter']['backend']}), {r['steps_per_s']:.2f} steps/s")
        if st["step"] != k or r["steps"] != k:
            fail(f"the run stopped at step {st['step']}, not {k}")
        bad = [key for key, v in st.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            fail(f"non-finite statistics: {bad}")
        print("web test: density statistics equal the native CPU path's "
              + same_densities(st, ref))

        v = r["verify"]
        if not v["pass"]:
            fail(f"verify failed in the page: {v.get('first_mismatch')}")
        bits = all(row["max_abs_error"] == 0 for row in v["stages"])
        print(f"web test: verify passed in the page ({len(v['stages'])} stage checks, "
              + ("every one bit for bit)" if bits else "within its tolerance, not bit for bit)"))

        f = r["frame"]
        share = f["pixels_unlike_background"] / (f["width"] * f["height"])
        if share < 0.01:
            fail(f"the drawn frame shows no particles ({f})")
        print(f"web test: the frame read back shows particles ({100 * share:.1f}% of its pixels)")

        # The viewer: the same winit loop, input and panel as the native window, drawn into a
        # texture the canvas's size (offscreen=1: headless Chromium on SwiftShader loses its
        # device when a WebGPU canvas is presented) and its third frame read back.
        r = finished_report(
            browser, f"{base}?view=1&offscreen=1&hide_ui=true&scene=dam-break&n={n}&frames=3"
            "&report=1", 1200, "view")
        f = r["view"]
        share = f["pixels_unlike_background"] / (f["width"] * f["height"])
        if f["frames"] < 3 or share < 0.01:
            fail(f"the viewer's third frame shows no particles ({f})")
        print(f"web test: the viewer drew {f['frames']} frames, the third showing particles "
              f"({100 * share:.1f}% of its pixels)")

        # Dropped onto the page, which puts them into the form's file input.
        def drop_scene_file(page):
            page.wait_for_selector("#status:has-text('Ready')")
            page.evaluate("""([scene, cube]) => {
                const files = new DataTransfer();
                files.items.add(new File([scene], "spill.json", { type: "application/json" }));
                files.items.add(new File([cube], "cube.obj", { type: "text/plain" }));
                document.body.dispatchEvent(new DragEvent("drop",
                    { dataTransfer: files, bubbles: true, cancelable: true }));
            }""", [SPILLING, CUBE_OBJ])
            page.wait_for_selector("#status:has-text('spill.json, cube.obj')")
            page.click("button[value=run]")

        r = finished_report(browser, f"{base}?n=1000&steps=60", 1200, "scene file",
                            act=drop_scene_file)
        st = r["stats"]
        counts = ["step", "particles", "outside"]
        if r["steps"] != spill_ref["step"] or any(st[key] != spill_ref[key] for key in counts):
            fail("the scene file with open sides ran otherwise than the native CPU path: "
                 + ", ".join(f"{key} {st[key]} vs {spill_ref[key]}" for key in counts))
        if st["particles"] >= 1000:
            fail("no particle left through the open sides")
        print(f"web test: a scene file with open sides and a mesh obstacle: "
              f"{1000 - st['particles']} of 1000 particles had left by step {st['step']}, "
              f"{st['particles']} stay, as natively; densities " + same_densities(st, spill_ref))

        browser.close()
    server.shutdown()
    print("web test: ok")


if __name__ == "__main__":
    main()
