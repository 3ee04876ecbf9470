//! The layers hold: no module of the library reaches, through `crate::` and `super::` paths,
//! a module that reaches back to it (directly or around a longer circle). Read from the source
//! text of `src/` (test modules, after `#[cfg(test)]`, left out: a test may look anywhere),
//! so a new upward import fails here, naming the circle, rather than in a later redesign.
//! `docs/architecture.md` draws the layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file below `src/` (`grid/walk.rs` → [grid, walk], `grains/mod.rs` →
/// [grains], `lib.rs` → []).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The deepest module a path names, if it is a module of the crate other than the root.
fn resolve(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|m| modules.contains(m))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths `text` names after each `crate::` and `super::` (with `{a, b::c}` groups opened),
/// as written, `super` resolved against `module`.
fn paths_named(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", module[..module.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            // One path, or a group of them.
            let tails: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end].split(',').map(str::trim).collect()
            } else {
                vec![rest]
            };
            for tail in tails {
                let mut path = base.clone();
                for seg in tail.split("::") {
                    let ident: String = seg.chars().take_while(|&c| is_ident(c)).collect();
                    if ident.is_empty() || ident.len() != seg.len() && !seg.starts_with(&ident) {
                        break;
                    }
                    path.push(ident.clone());
                    if ident.len() != seg.len() {
                        break;
                    }
                }
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.retain(|f| f.file_name().is_some_and(|n| n != "main.rs"));
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in &files {
        let module = module_of(&src, f);
        let text = std::fs::read_to_string(f).unwrap();
        let code: String = text
            .lines()
            .take_while(|l| l.trim() != "#[cfg(test)]")
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let targets = edges.entry(module.clone()).or_default();
        for path in paths_named(&code, &module) {
            if let Some(m) = resolve(&modules, &path)
                && m != module
                && !m.is_empty()
            {
                targets.insert(m);
            }
        }
    }
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 100,
        "the reader found almost no imports: it checks nothing"
    );
    // Depth-first search; a grey module met again closes a circle.
    fn visit(
        m: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for t in edges.get(m).into_iter().flatten() {
            match state.get(t).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == t).unwrap();
                    let mut circle = stack[from..].to_vec();
                    circle.push(t.clone());
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(t, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if state.get(m).copied().unwrap_or(0) == 0 {
            let circle = visit(m, &edges, &mut state, &mut Vec::new());
            assert!(
                circle.is_none(),
                "an import circle: {}",
                circle
                    .unwrap()
                    .iter()
                    .map(|m| m.join("::"))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            );
        }
    }
}
