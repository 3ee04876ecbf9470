//! The results page's quick tier: each figure in the "Quick figures" table of docs/results.md
//! is computed here, by the same runs the physics tests make (each once per test binary), and
//! must lie within the row's tolerance of what the page says; and the README's status is the
//! page's, every figure in it backed by the page. `scripts/results.sh quick` runs this module
//! alone.

use crate::{dfsph, physics};
use gpu_sph::solver::Solver;

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// A row of the quick table: its id, the value the page gives and the tolerance, in the row's
/// unit.
#[derive(Debug)]
struct Row {
    id: String,
    value: f64,
    tolerance: f64,
}

/// A number as the pages write it: `−3.2` with a minus sign or a hyphen, `12 000` with a thin
/// or plain space between thousands.
fn number(cell: &str) -> Option<f64> {
    let t: String = cell
        .trim()
        .replace('−', "-")
        .replace('+', "")
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{2009}')
        .collect();
    t.parse().ok()
}

/// The rows of the table under docs/results.md's "## Quick figures" heading:
/// `| `id` | what | value | unit | tolerance | command |`.
fn quick_rows(page: &str) -> Vec<Row> {
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Quick figures"))
        .expect("docs/results.md has a \"## Quick figures\" section");
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let id = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some(Row {
                id: id.to_string(),
                value: number(cells.get(3)?).unwrap_or_else(|| panic!("{id}: value {line}")),
                tolerance: number(cells.get(5)?)
                    .unwrap_or_else(|| panic!("{id}: tolerance {line}")),
            })
        })
        .collect()
}

/// Every figure the page lists that this module computes.
const IDS: [&str; 13] = [
    "wave-wcsph-period",
    "wave-wcsph-kept",
    "wave-dfsph-2-period",
    "wave-dfsph-2-kept",
    "collapse-dfsph-3000-front",
    "collapse-dfsph-3000-column",
    "collapse-wcsph-3000-front",
    "collapse-wcsph-3000-column",
    "rest-wcsph-late-speed",
    "rest-dfsph-iterations-20",
    "rest-dfsph-iterations-80",
    "rest-dfsph-iterations-160",
    "rest-dfsph-iterations-ratio",
];

/// Each computed figure against the page's row of its id; the drifted ones in the message.
fn check(computed: &[(&str, f64)]) {
    let rows = quick_rows(&read("docs/results.md"));
    let mut drifted = Vec::new();
    for &(id, value) in computed {
        let row = rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("docs/results.md's quick table has no row `{id}`"));
        eprintln!(
            "{id}: computed {value:.4}, the page {} ± {}",
            row.value, row.tolerance
        );
        // Written so that a NaN figure is never within.
        let within = (value - row.value).abs() <= row.tolerance;
        if !within {
            drifted.push(format!(
                "`{id}`: the code gives {value:.4}, the page says {} ± {}",
                row.value, row.tolerance
            ));
        }
    }
    assert!(
        drifted.is_empty(),
        "figures of docs/results.md that the code no longer produces (run \
         `scripts/results.sh quick` and look again before changing the page):\n{}",
        drifted.join("\n")
    );
}

#[test]
fn the_quick_table_lists_exactly_the_checked_figures() {
    let rows = quick_rows(&read("docs/results.md"));
    let mut ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    let mut want = IDS.to_vec();
    want.sort();
    assert_eq!(ids, want);
    assert!(rows.iter().all(|r| r.tolerance > 0.0));
    assert_eq!(number("−3.2"), Some(-3.2));
    assert_eq!(number("12 000"), Some(12000.0));
    assert_eq!(number("+1.5"), Some(1.5));
}

#[test]
fn quick_standing_wave_figures_are_the_pages() {
    let (we, wk) = physics::wcsph_wave();
    let (de, dk) = physics::dfsph_wave();
    check(&[
        ("wave-wcsph-period", 100.0 * we),
        ("wave-wcsph-kept", 100.0 * wk),
        ("wave-dfsph-2-period", 100.0 * de),
        ("wave-dfsph-2-kept", 100.0 * dk),
    ]);
}

#[test]
fn quick_collapse_figures_are_the_pages() {
    let (df, dc) = physics::dam_break_3000(Solver::Dfsph);
    let (wf, wc) = physics::dam_break_3000(Solver::Wcsph);
    check(&[
        ("collapse-dfsph-3000-front", 100.0 * df),
        ("collapse-dfsph-3000-column", 100.0 * dc),
        ("collapse-wcsph-3000-front", 100.0 * wf),
        ("collapse-wcsph-3000-column", 100.0 * wc),
    ]);
}

#[test]
fn quick_rest_figures_are_the_pages() {
    let it = dfsph::resting_column_iterations();
    check(&[
        (
            "rest-wcsph-late-speed",
            1000.0 * physics::settled_late_speed(),
        ),
        ("rest-dfsph-iterations-20", it[0]),
        ("rest-dfsph-iterations-80", it[1]),
        ("rest-dfsph-iterations-160", it[2]),
        ("rest-dfsph-iterations-ratio", it[2] / it[0]),
    ]);
}

/// The text between the `<!-- status -->` and `<!-- /status -->` markers of a page.
fn status(page: &str) -> Option<&str> {
    let start = page.find("<!-- status -->")? + "<!-- status -->".len();
    let end = page[start..].find("<!-- /status -->")? + start;
    Some(page[start..end].trim())
}

/// The numbers a text writes (digits with their decimal point), as written.
fn figures(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_digit() || (c == '.' && !cur.is_empty()) {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(cur.trim_end_matches('.').to_string());
            cur.clear();
        }
    }
    out
}

#[test]
fn the_readme_status_is_the_results_pages_and_each_figure_is_on_the_page() {
    let readme = read("README.md");
    let page = read("docs/results.md");
    let ours = status(&readme).expect("README.md has a status block between the markers");
    let theirs = status(&page).expect("docs/results.md has a status block between the markers");
    assert_eq!(
        ours, theirs,
        "README.md's status is not docs/results.md's: copy the page's (scripts/results.sh status)"
    );
    let rest = page.replacen(theirs, "", 1);
    let backed = figures(&rest);
    for f in figures(theirs) {
        assert!(
            backed.contains(&f),
            "the status says {f}, which no table or line of docs/results.md outside it gives"
        );
    }
    assert_eq!(
        figures("−4.5% at τ = 2.21, 12 000."),
        ["4.5", "2.21", "12", "000"]
    );
}
