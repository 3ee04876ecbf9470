//! Docs that cannot rot silently: every relative link in README.md and docs/ resolves (file and
//! heading), every project path and every `--flag` the pages name exists, and every shader file
//! a source comment names is in `shaders/`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page under docs/, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The files below `dir` (build outputs and caches skipped) that `keep` keeps; none when `dir`
/// is absent.
fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            if !p.ends_with("target") && !p.ends_with("__pycache__") {
                out.extend(files_under(&p, keep));
            }
        } else if keep(&p) {
            out.push(p);
        }
    }
    out
}

/// The page's text outside fenced code blocks (links and headings live outside them).
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// The anchor GitHub gives a heading: lower case, letters, digits, `-` and `_` kept, spaces
/// to `-`, everything else dropped; a repeated anchor gets `-1`, `-2`, ….
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let heading = rest.trim_start_matches('#').trim();
        let base = slug(heading);
        let k = seen.entry(base.clone()).or_insert(0);
        out.insert(if *k == 0 {
            base.clone()
        } else {
            format!("{base}-{k}")
        });
        *k += 1;
    }
    out
}

/// The targets of the page's inline links `[text](target)`.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    out
}

/// Every relative link's file and heading, or the list of the broken ones.
fn broken_links(pages: &[(PathBuf, String)]) -> Vec<String> {
    let mut broken = Vec::new();
    for (page, text) in pages {
        let dir = page.parent().unwrap();
        let mut fenced = false;
        for (no, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    dir.join(file)
                };
                let at = format!("{}:{}: ({target})", page.display(), no + 1);
                if !path.exists() {
                    broken.push(format!("{at}: no file {}", path.display()));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let target_text = std::fs::read_to_string(&path).unwrap_or_default();
                    if !anchors(&target_text).contains(anchor) {
                        broken.push(format!("{at}: no heading #{anchor} in {}", path.display()));
                    }
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let broken = broken_links(&pages());
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_broken_link_or_heading_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    let text = "# Two words\n\n[ok](#two-words) [no file](gone.md) [no heading](#three-words)\n\
                ```\n[in code](ignored.md)\n```\n";
    std::fs::write(&page, text).unwrap();
    let broken = broken_links(&[(page, text.to_string())]);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("no file"), "{broken:?}");
    assert!(broken[1].contains("no heading #three-words"), "{broken:?}");
    assert_eq!(
        slug("What `--verify` checks (GPU × CPU)"),
        "what---verify-checks-gpu--cpu"
    );
}

/// The top-level folders a path on a page may start with to name a file of the project.
const PROJECT_DIRS: [&str; 10] = [
    "src/",
    "shaders/",
    "docs/",
    "scripts/",
    "tests/",
    "python/",
    "examples/",
    "benches/",
    "scenes/",
    ".ci/",
];

/// The project paths a page names: words starting with one of [`PROJECT_DIRS`], cut at the
/// first character no path of ours has (`:` of `file:line`, `#` of an anchor, punctuation).
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.char_indices() {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "/._-".contains(c)) {
            continue;
        }
        let rest = &text[i..];
        if !PROJECT_DIRS.iter().any(|d| rest.starts_with(d)) {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || "/._-*{},".contains(c)))
            .unwrap_or(rest.len());
        let mut path = rest[..end].trim_end_matches(['.', ',', '-']).to_string();
        // `src/solver/dfsph/{cells,levels}.rs` and `shaders/solver/dfsph/*.wgsl` name several files: the
        // folder before the pattern must exist.
        if let Some(k) = path.find(['{', '*']) {
            path.truncate(path[..k].rfind('/').map_or(0, |s| s + 1));
        } else if let Some(k) = path.find(',') {
            path.truncate(k);
        }
        out.push(path);
    }
    out
}

#[test]
fn every_project_path_the_docs_name_exists() {
    let root = root();
    let mut missing = Vec::new();
    for (page, text) in pages() {
        for path in named_paths(&text) {
            if !root.join(&path).exists() {
                missing.push(format!("{}: {path}", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
    assert_eq!(
        named_paths("see `src/solver/dfsph/{cells,levels}.rs`, src/main.rs:12 and docs/x.md#y."),
        ["src/solver/dfsph/", "src/main.rs", "docs/x.md"]
    );
}

/// The flags of commands that are not ours, which the pages name as a user types them.
const OTHER_TOOLS_FLAGS: [&str; 24] = [
    // cargo and rustup
    "--release",
    "--test",
    "--bench",
    "--example",
    "--all-targets",
    "--workspace",
    "--path",
    "--lib",
    "--all",
    "--check",
    "--features",
    "--no-default-features",
    "--target",
    "--locked",
    // pip, maturin, pytest, python
    "--upgrade",
    "--clear",
    "--interpreter",
    "--no-build-isolation",
    // the shell and apt
    "--help",
    "--version",
    "--no-install-recommends",
    // Chromium
    "--headless",
    "--enable-unsafe-webgpu",
    "--use-angle",
];

/// Every `--flag` written in `text` (in prose or in code).
fn named_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("--") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            continue;
        }
        let rest = &text[i + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        let name = rest[..end].trim_end_matches('-');
        // `--camera-*` names a family of flags, each of which the pages name on its own.
        let family = rest[end..].starts_with('*');
        if !family && name.len() > 1 && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.insert(format!("--{name}"));
        }
    }
    out
}

/// The text of the project's own commands and scripts, where each flag the docs may name is
/// defined: the binary's `--help`, the examples, the scripts, the Python package and CI.
fn defined_flags() -> BTreeSet<String> {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_gpu-sph"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let mut text = String::from_utf8(help.stdout).unwrap();
    for dir in ["examples", "scripts", "python", "benches", ".ci", "web"] {
        for p in files_under(&root().join(dir), &|p| {
            p.extension()
                .is_none_or(|e| ["rs", "sh", "py", "toml"].iter().any(|x| e == *x))
        }) {
            text.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
    let mut flags = named_flags(&text);
    flags.extend(OTHER_TOOLS_FLAGS.iter().map(|f| f.to_string()));
    flags
}

#[test]
fn every_flag_the_docs_name_exists() {
    let defined = defined_flags();
    let mut unknown = Vec::new();
    for (page, text) in pages() {
        for flag in named_flags(&text) {
            if !defined.contains(&flag) {
                unknown.push(format!("{}: {flag}", page.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags nothing defines:\n{}",
        unknown.join("\n")
    );
    assert_eq!(
        named_flags("`gpu-sph --end-time 2 --x` and a—dash, 1--2, --Cap, --camera-*"),
        BTreeSet::from(["--end-time".to_string()])
    );
}

#[test]
fn every_shader_file_a_source_comment_names_exists() {
    let root = root();
    let mut shaders = BTreeSet::new();
    let wgsl = files_under(&root.join("shaders"), &|p| {
        p.extension().is_some_and(|e| e == "wgsl")
    });
    for p in &wgsl {
        shaders.insert(p.file_name().unwrap().to_string_lossy().to_string());
        shaders.insert(p.strip_prefix(&root).unwrap().to_string_lossy().to_string());
        let within = p.strip_prefix(root.join("shaders")).unwrap();
        shaders.insert(within.to_string_lossy().to_string());
    }
    let sources = files_under(&root.join("src"), &|p| {
        p.extension().is_some_and(|e| e == "rs")
    });
    let mut missing = Vec::new();
    for p in sources {
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, _) in text.match_indices(".wgsl") {
            let start = text[..i]
                .rfind(|c: char| !(c.is_alphanumeric() || "_/".contains(c)))
                .map_or(0, |k| k + 1);
            // `concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/x.wgsl")` names it from the root.
            let name = text[start..i + 5].trim_start_matches('/');
            if name.len() > 5 && !name.contains("{") && !shaders.contains(name) {
                missing.push(format!("{}: {name}", p.display()));
            }
        }
    }
    assert!(!shaders.is_empty());
    assert!(
        missing.is_empty(),
        "shader files that do not exist:\n{}",
        missing.join("\n")
    );
}
