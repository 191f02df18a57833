//! Stamps the library with what it was built from, so the Lua loader can
//! tell a stale build from a current one without work at startup:
//! - `ACP_GIT_REV`: the git revision of the checkout (`unknown` outside a
//!   git checkout), and `ACP_GIT_DIRTY` (`1` when the core's sources had
//!   uncommitted changes). The loader compares the revision with the
//!   checkout's HEAD, a couple of small file reads.
//! - `ACP_SOURCE_STAMP`: a hash of the sources, checked only when the
//!   revisions differ, the build was dirty, or `ACP_VERIFY_SOURCES` is set
//!   (the tests). The Lua side (`lua/acp/core.lua`) computes the same hash
//!   over the same files.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The checkout's revision, and whether the core's sources differ from it.
/// The build script runs again when HEAD moves (a commit, a checkout, a
/// plugin manager's update), so the stamp follows the checkout.
fn git_stamp(root: &Path) -> (String, bool) {
    let Some(rev) = git(root, &["rev-parse", "HEAD"]) else {
        return ("unknown".into(), true);
    };
    for name in ["HEAD", "packed-refs"] {
        for dir in [
            git(root, &["rev-parse", "--git-dir"]),
            git(root, &["rev-parse", "--git-common-dir"]),
        ]
        .into_iter()
        .flatten()
        {
            let path = root.join(dir).join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    if let Some(head_ref) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(root, &["rev-parse", "--git-path", &head_ref]) {
            let path = root.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let dirty = git(
        root,
        &[
            "status",
            "--porcelain",
            "--",
            "src",
            "Cargo.toml",
            "Cargo.lock",
            "build.rs",
        ],
    )
    .is_none_or(|s| !s.is_empty());
    (rev, dirty)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let mut files: Vec<PathBuf> = ["Cargo.toml", "Cargo.lock", "build.rs"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    collect(&root.join("src"), &mut files);
    let mut rel: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
                p,
            )
        })
        .collect();
    rel.sort();
    let mut hasher = Sha256::new();
    for (name, path) in &rel {
        let content = std::fs::read(path).unwrap();
        hasher.update(format!("{name}\n{}\n", content.len()).as_bytes());
        hasher.update(&content);
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=src");
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=ACP_SOURCE_STAMP={hex}");
    let (rev, dirty) = git_stamp(&root);
    println!("cargo:rustc-env=ACP_GIT_REV={rev}");
    println!(
        "cargo:rustc-env=ACP_GIT_DIRTY={}",
        if dirty { 1 } else { 0 }
    );
}
