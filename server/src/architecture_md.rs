//! ARCHITECTURE.md's codemap, kept a true map: every path it names in backticks exists,
//! and every source file of `server/src` and `protocol/src` (tests aside) is named, by a
//! path that ends with it or by a folder that holds it. A file added, moved or removed
//! without its codemap line fails the build's tests.

use std::path::{Path, PathBuf};

const ARCHITECTURE_MD: &str = include_str!("../../ARCHITECTURE.md");
/// Endings that make a backticked word a file's name (others need a `/` to be a path).
const FILE_ENDINGS: [&str; 8] = [".rs", ".js", ".mjs", ".sh", ".conf", ".sql", ".toml", ".md"];
/// The source folders every file of which the codemap must name.
const COVERED: [&str; 2] = ["server/src", "protocol/src"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The codemap's sections: each crate or folder heading (`### \`server/\``) and the paths
/// named under it.
fn sections() -> Vec<(String, Vec<String>)> {
    let start = ARCHITECTURE_MD.find("## Codemap").expect("a codemap");
    let map = &ARCHITECTURE_MD[start..];
    let map = &map[..map[3..].find("\n## ").map_or(map.len(), |end| end + 3)];
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### `") {
            let root = heading.split('`').next().unwrap_or_default();
            sections.push((root.to_owned(), Vec::new()));
            continue;
        }
        let Some((_, paths)) = sections.last_mut() else {
            continue;
        };
        paths.extend(
            line.split('`')
                .skip(1)
                .step_by(2)
                .filter(|w| is_path(w))
                .map(str::to_owned),
        );
    }
    sections
}

fn is_path(word: &str) -> bool {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    plain
        && !word.starts_with('/')
        && (word.contains('/') || FILE_ENDINGS.iter().any(|e| word.ends_with(e)))
}

/// Every file below `dir`, as paths relative to the repository, build output and
/// installed packages left out.
fn files_below(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if matches!(
            name.to_str(),
            Some("target" | "node_modules" | "dist" | ".git")
        ) {
            continue;
        }
        if path.is_dir() {
            files_below(&path, out);
        } else if let Ok(rel) = path.strip_prefix(repo()) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Whether `named` (a file's path, or a folder's ending in `/`) names `file`: its last
/// components, or a run of its folders.
fn names(named: &str, file: &str) -> bool {
    let file: Vec<&str> = file.split('/').collect();
    let named: Vec<&str> = named.trim_end_matches('/').split('/').collect();
    file.ends_with(&named)
        || file[..file.len() - 1]
            .windows(named.len())
            .any(|run| run == named.as_slice())
}

#[test]
fn every_path_the_codemap_names_exists() {
    let mut absent = Vec::new();
    for (root, paths) in sections() {
        let mut files = Vec::new();
        files_below(&repo().join(&root), &mut files);
        for path in paths {
            let found = repo().join(&path).exists()
                || repo().join(&root).join(&path).exists()
                || files.iter().any(|f| names(&path, f));
            if !found {
                absent.push(format!("{root}: {path}"));
            }
        }
    }
    assert!(
        absent.is_empty(),
        "ARCHITECTURE.md names what is not there: {absent:#?}"
    );
}

#[test]
fn every_source_file_is_on_the_codemap() {
    let sections = sections();
    let mut unnamed = Vec::new();
    for dir in COVERED {
        let root = format!("{}/", dir.split('/').next().unwrap());
        let paths = &sections
            .iter()
            .find(|(r, _)| *r == root)
            .unwrap_or_else(|| panic!("a codemap section for {root}"))
            .1;
        let mut files = Vec::new();
        files_below(&repo().join(dir), &mut files);
        for file in files {
            let rel = &file[root.len()..];
            let test = rel
                .split('/')
                .any(|c| c == "tests" || c == "tests.rs" || c.ends_with("_tests.rs"));
            if test || !(rel.ends_with(".rs")) {
                continue;
            }
            // A bare `mod.rs` names no one file: some folder's is meant.
            if !paths.iter().any(|p| p != "mod.rs" && names(p, rel)) {
                unnamed.push(file);
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's codemap does not name: {unnamed:#?}"
    );
}
