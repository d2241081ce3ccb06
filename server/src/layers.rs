//! The server's modules form layers, not a circle: no top-level module of `server/src`
//! reaches itself through the `crate::` paths its code names (tests aside), and the
//! layers ARCHITECTURE.md draws hold. The database and the bus store and carry what the
//! games, the lobby and the registry act on (`msg`, `record`), so they sit below them and
//! import nothing of theirs. A path that breaks this fails the build's tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that must not import the ones listed with them.
const BELOW: [(&str, &[&str]); 5] = [
    ("msg", &["bus", "db", "game", "lobby", "registry", "peers"]),
    ("record", &["msg", "bus", "db", "game", "lobby", "registry"]),
    ("peers", &["bus", "game", "lobby", "registry"]),
    ("db", &["bus", "game", "lobby", "registry", "cluster"]),
    (
        "bus",
        &["game", "lobby", "registry", "connection", "session"],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules: every file and folder of `src` but the crate roots.
fn top_level() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .filter(|m| m != "lib" && m != "main")
        .collect()
}

/// Modules compiled for tests only (`#[cfg(test)] mod x;` in `lib.rs`).
fn test_only() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let lines: Vec<&str> = lib.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim() == "#[cfg(test)]")
        .filter_map(|w| w[1].trim().strip_prefix("mod "))
        .map(|m| m.trim_end_matches(';').to_owned())
        .collect()
}

fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().unwrap().to_str().unwrap();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// A file's code, its comments and its `mod tests` taken off.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    text.lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names: `crate::x` anywhere, and `x` in `use crate::{x, y::z}`.
fn named(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find(';').unwrap_or(group.len())];
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        found.insert(ident(&group[j..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| modules.contains(m));
    found
}

/// Which top-level modules each one imports, and the files that do it.
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>> {
    let modules = top_level();
    let skip = test_only();
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>> = BTreeMap::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src()).unwrap().to_owned();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_str()
                .unwrap();
            let from = first.trim_end_matches(".rs").to_owned();
            if !modules.contains(&from) || skip.contains(&from) || is_test_file(&rel) {
                continue;
            }
            let code = code_of(&std::fs::read_to_string(&path).unwrap());
            for to in named(&code, &modules) {
                if to != from && !skip.contains(&to) {
                    let files = edges.entry(from.clone()).or_default();
                    files.entry(to).or_default().insert(rel.clone());
                }
            }
        }
    }
    edges
}

/// A path from `from` back to itself, if there is one.
fn circle(
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>,
    from: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_owned()]];
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in edges.get(last).into_iter().flat_map(|e| e.keys()) {
            if next == from {
                let mut path = path.clone();
                path.push(next.clone());
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut path = path.clone();
                path.push(next.clone());
                stack.push(path);
            }
        }
    }
    None
}

#[test]
fn no_module_reaches_itself() {
    let edges = graph();
    assert!(edges.len() > 20, "the graph is read: {edges:?}");
    for module in top_level() {
        if let Some(path) = circle(&edges, &module) {
            let by: Vec<String> = path
                .windows(2)
                .map(|w| format!("{} -> {}: {:?}", w[0], w[1], edges[&w[0]][&w[1]]))
                .collect();
            panic!("an import circle: {}\n{}", path.join(" -> "), by.join("\n"));
        }
    }
}

#[test]
fn the_lower_layers_import_nothing_above_them() {
    let edges = graph();
    for (module, above) in BELOW {
        for up in above {
            if let Some(files) = edges.get(module).and_then(|e| e.get(*up)) {
                panic!("{module} imports {up}, which sits above it: {files:?}");
            }
        }
    }
}

#[test]
fn the_reader_finds_what_code_names() {
    let modules: BTreeSet<String> = ["bus", "game", "lobby", "msg", "record"]
        .map(str::to_owned)
        .into();
    let code = code_of(
        "use crate::bus::Bus; // crate::lobby in a comment\n\
         use crate::{msg::{GameCmd, NewGame}, record};\n\
         fn f() { crate::game::spawn(); }\n\
         #[cfg(test)]\nmod tests { use crate::lobby::X; }",
    );
    let found: Vec<String> = named(&code, &modules).into_iter().collect();
    assert_eq!(found, ["bus", "game", "msg", "record"]);
    let mut edges = BTreeMap::new();
    let to =
        |edges: &mut BTreeMap<String, BTreeMap<String, BTreeSet<PathBuf>>>, a: &str, b: &str| {
            let from = edges.entry(a.to_owned()).or_default();
            from.insert(b.to_owned(), BTreeSet::new());
        };
    to(&mut edges, "a", "b");
    to(&mut edges, "b", "c");
    assert_eq!(circle(&edges, "a"), None);
    to(&mut edges, "c", "a");
    assert_eq!(circle(&edges, "b").unwrap(), ["b", "c", "a", "b"]);
}
