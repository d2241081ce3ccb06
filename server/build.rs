//! Builds the browser client (`clients/web`) so that `src/web.rs` can embed it.
//!
//! Runs `npm ci` when `node_modules` is missing or older than `package-lock.json`, then
//! `node build.mjs $OUT_DIR/web`, which bundles the ES modules with esbuild and writes
//! `index.html`, `app.js` and `app.css`. Cargo reruns this only when the client's sources,
//! its HTML or its package files change. Without Node.js and npm the build fails, saying
//! so: a server that silently served no client would be worse.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let web = manifest.join("../clients/web");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("web");
    for input in [
        "src",
        "index.html",
        "build.mjs",
        "package.json",
        "package-lock.json",
    ] {
        println!("cargo:rerun-if-changed=../clients/web/{input}");
    }
    println!("cargo:rerun-if-env-changed=NPM");

    // Builds of this crate in other profiles or target directories may run at the same
    // time; `npm ci` deletes node_modules first, so installs must not overlap.
    let package_json = web.join("package.json");
    let lock = File::open(&package_json)
        .unwrap_or_else(|e| fail(&format!("cannot open {}: {e}", package_json.display())));
    lock.lock()
        .unwrap_or_else(|e| fail(&format!("cannot lock {}: {e}", package_json.display())));

    let npm = std::env::var("NPM").unwrap_or_else(|_| default_npm().to_owned());
    if needs_install(&web) {
        let install = if web.join("package-lock.json").exists() {
            "ci"
        } else {
            "install"
        };
        run(
            Command::new(&npm)
                .args([install, "--no-audit", "--no-fund"])
                .current_dir(&web),
            &format!("{npm} {install}"),
        );
    }
    run(
        Command::new("node")
            .arg("build.mjs")
            .arg(&out)
            .current_dir(&web),
        "node build.mjs",
    );
    for file in ["index.html", "app.js", "app.css"] {
        if !out.join(file).is_file() {
            fail(&format!("node build.mjs did not write {file}"));
        }
    }
}

fn default_npm() -> &'static str {
    if cfg!(windows) {
        "npm.cmd"
    } else {
        "npm"
    }
}

/// Whether `npm ci` must run: no installed tree, or a lock file newer than it.
fn needs_install(web: &Path) -> bool {
    let installed = modified(&web.join("node_modules/.package-lock.json"));
    let wanted = modified(&web.join("package-lock.json")).max(modified(&web.join("package.json")));
    match (installed, wanted) {
        (None, _) => true,
        (Some(installed), Some(wanted)) => wanted > installed,
        (Some(_), None) => false,
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn run(command: &mut Command, what: &str) {
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!("`{what}` in clients/web failed ({status})")),
        Err(e) => fail(&format!(
            "could not run `{what}` in clients/web: {e}. Building elementals-server builds \
             the browser client too, which needs Node.js (20 or newer) and npm on PATH"
        )),
    }
}

fn fail(message: &str) -> ! {
    // A panic in a build script prints its message under "failed to run custom build command".
    panic!("\n\nelementals-server: building the web client failed: {message}\n\n");
}
