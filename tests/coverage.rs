//! Every command Tessera advertises must be exercised by some test file:
//! this test asks the server for `COMMAND LIST` (commands and subcommands)
//! and looks for each name in the test sources, as a quoted word
//! (`"get"`, `"GET"`) or, for subcommands, as `"config", "get"` /
//! `"config get` / `config|get`.

mod common;

use common::{Frame, ServerKind, TestServer};

fn test_sources() -> String {
    let mut text = String::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("coverage.rs") {
                text.push_str(
                    &std::fs::read_to_string(&p)
                        .unwrap_or_default()
                        .to_ascii_lowercase(),
                );
                text.push('\n');
            }
        }
    }
    text
}

fn covered(src: &str, name: &str) -> bool {
    match name.split_once('|') {
        None => src.contains(&format!("\"{name}\"")) || src.contains(&format!("\"{name} ")),
        Some((parent, sub)) => {
            src.contains(&format!("\"{parent}\", \"{sub}\""))
                || src.contains(&format!("\"{parent}\",\"{sub}\""))
                || src.contains(&format!("\"{parent} {sub}"))
                || src.contains(&format!("{parent}|{sub}"))
        }
    }
}

#[test]
fn every_advertised_command_has_a_test() {
    let server = TestServer::start_kind(ServerKind::Tessera, &[]);
    let mut raw = server.raw();
    let Frame::Array(names) = raw.call(&["COMMAND", "LIST"]) else {
        panic!("COMMAND LIST did not return an array");
    };
    let src = test_sources();
    let mut missing = Vec::new();
    for n in names {
        let Frame::Bulk(n) = n else { continue };
        let name = String::from_utf8_lossy(&n).to_ascii_lowercase();
        if name.ends_with("|help") {
            continue;
        }
        if !covered(&src, &name) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "commands without a test: {missing:?}");
}
