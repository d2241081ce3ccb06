//! Builds the browser client (`clients/web`) so that `src/web.rs` can embed it.
//!
//! The npm packages the bundle needs are installed in `$OUT_DIR/npm` (`npm ci` from a copy
//! of `package.json` and the committed `package-lock.json`), never in the source tree, and
//! again only when the lock changes. Then `node build.mjs $OUT_DIR/web $OUT_DIR/npm/node_modules`
//! bundles the ES modules with esbuild and writes `index.html`, `app.js` and `app.css`; the
//! bundle includes the TypeScript SDK from `clients/ts/dist`, whose only dependency
//! (`@msgpack/msgpack`) the client's own packages provide.
//! Without Node.js and npm the build fails, saying so: a server that silently served no
//! client would be worse.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let web = manifest.join("../clients/web");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let out = out_dir.join("web");
    for input in [
        "src",
        "index.html",
        "build.mjs",
        "package.json",
        "package-lock.json",
    ] {
        println!("cargo:rerun-if-changed=../clients/web/{input}");
    }
    // The client bundles the TypeScript SDK from its committed build.
    for input in ["dist", "package.json"] {
        println!("cargo:rerun-if-changed=../clients/ts/{input}");
    }
    println!("cargo:rerun-if-env-changed=NPM");

    let npm_dir = out_dir.join("npm");
    install(&web, &npm_dir);
    run(
        Command::new("node")
            .arg("build.mjs")
            .arg(&out)
            .arg(npm_dir.join("node_modules"))
            .current_dir(&web),
        "node build.mjs",
    );
    for file in ["index.html", "app.js", "app.css"] {
        if !out.join(file).is_file() {
            fail(&format!("node build.mjs did not write {file}"));
        }
    }
}

/// `npm ci` in `npm_dir` from the source tree's package files, unless the lock installed
/// there is the one in the tree.
fn install(web: &Path, npm_dir: &Path) {
    let lock = read(&web.join("package-lock.json"));
    let installed = npm_dir.join("installed-package-lock.json");
    if std::fs::read(&installed).ok().as_deref() == Some(lock.as_slice()) {
        return;
    }
    std::fs::create_dir_all(npm_dir)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", npm_dir.display())));
    write(
        &npm_dir.join("package.json"),
        &read(&web.join("package.json")),
    );
    write(&npm_dir.join("package-lock.json"), &lock);
    let npm = std::env::var("NPM").unwrap_or_else(|_| default_npm().to_owned());
    run(
        Command::new(&npm)
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(npm_dir),
        &format!("{npm} ci"),
    );
    // Written last: an install cut short is redone.
    write(&installed, &lock);
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())))
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())))
}

fn default_npm() -> &'static str {
    if cfg!(windows) {
        "npm.cmd"
    } else {
        "npm"
    }
}

fn run(command: &mut Command, what: &str) {
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!("`{what}` for clients/web failed ({status})")),
        Err(e) => fail(&format!(
            "could not run `{what}` for clients/web: {e}. Building elementals-server builds \
             the browser client too, which needs Node.js (20 or newer) and npm on PATH"
        )),
    }
}

fn fail(message: &str) -> ! {
    // A panic in a build script prints its message under "failed to run custom build command".
    panic!("\n\nelementals-server: building the web client failed: {message}\n\n");
}
