//! Stamps the library with what it was built from, so the Lua loader can
//! tell a stale build from a current one: `ACP_SOURCE_STAMP`, a hash of the
//! sources. The Lua side (`lua/acp/core/init.lua`) computes the same hash
//! over the same files, and keeps a record of the last match so that it
//! hashes again only after a rebuild or a source change.
//!
//! Nothing else goes in: in particular not the git revision, which would
//! make every commit (even one that leaves the core alone) re-run this
//! script and so recompile the crate.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

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
}
