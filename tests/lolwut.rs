//! LOLWUT: the version line, Schotter (VERSION 5) and the skyline (VERSION 6). The drawings are
//! random, as Redis's are, so exact replies are checked where Redis's are deterministic (its
//! first two rows of squares, a one-row skyline) and the geometry elsewhere. Expected values are
//! what redis-server 7.0 replies.

mod common;

use common::{bulk, error, fmt_frame, Frame, RawClient, TestServer};

const VERSION_LINE: &str = "Redis ver. 7.0.15\n";
const SCHOTTER: &str = "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n";
const SKYLINE: &str = "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. 7.0.15\n";
const NOT_INTEGER: &str = "ERR value is not an integer or out of range";

fn art(c: &mut RawClient, args: &[&str]) -> String {
    match c.call(args) {
        Frame::Bulk(b) => String::from_utf8(b).expect("utf-8 art"),
        other => panic!("{args:?} answered {}", fmt_frame(&other)),
    }
}

#[test]
fn version_line_and_argument_errors() {
    let s = TestServer::start();
    let mut c = s.raw();
    for args in [
        &["LOLWUT"][..],
        &["LOLWUT", "VERSION", "1"],
        &["LOLWUT", "version", "7"],
        &["LOLWUT", "VERSION", "-1"],
        &["LOLWUT", "VERSION"],
        &["LOLWUT", "foo", "5"],
    ] {
        assert_eq!(c.call(args), bulk(VERSION_LINE), "{args:?}");
    }
    for args in [
        &["LOLWUT", "VERSION", "x"][..],
        &["LOLWUT", "VERSION", "5", "a"],
        &["LOLWUT", "VERSION", "5", "1", "1", "1.5"],
        &["LOLWUT", "VERSION", "6", "3", "y"],
    ] {
        assert_eq!(c.call(args), error(NOT_INTEGER), "{args:?}");
    }
    // The version is read as a C unsigned int: 2^32 + 5 is 5.
    assert!(art(&mut c, &["LOLWUT", "VERSION", "4294967301"]).ends_with(SCHOTTER));

    let mut r3 = s.raw();
    assert!(matches!(r3.call(&["HELLO", "3"]), Frame::Map(_)));
    assert_eq!(
        r3.call(&["LOLWUT"]),
        Frame::Verbatim {
            format: *b"txt",
            text: VERSION_LINE.into()
        }
    );
}

#[test]
fn schotter_rows_before_the_disorder_are_exact() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(
        art(&mut c, &["LOLWUT", "VERSION", "5", "1", "1", "1"]),
        format!("⠋\n{SCHOTTER}")
    );
    // Out-of-range sizes are clamped.
    assert_eq!(
        art(&mut c, &["LOLWUT", "VERSION", "5", "0", "-4", "0"]),
        format!("⠋\n{SCHOTTER}")
    );
    assert_eq!(
        art(&mut c, &["LOLWUT", "VERSION", "5", "6", "3", "2"]),
        format!("⠀⡤⣤⢤⢤⠀\n⠀⣟⣿⣻⣻⠀\n⠀⠀⠀⠀⠀⠀{SCHOTTER}")
    );
}

#[test]
fn schotter_geometry() {
    let s = TestServer::start();
    let mut c = s.raw();
    // The defaults: 66 columns, 8 squares by 12.
    for (args, columns, lines) in [
        (&["LOLWUT", "VERSION", "5"][..], 66, 49),
        (&["LOLWUT", "VERSION", "5", "40", "5", "9"], 40, 35),
        (&["LOLWUT", "VERSION", "5", "2000", "1", "1"], 1000, 500),
    ] {
        let text = art(&mut c, args);
        let drawing = text.strip_suffix(SCHOTTER).expect("the caption");
        let rows: Vec<&str> = drawing.lines().collect();
        assert_eq!(rows.len(), lines, "{args:?}");
        for row in rows {
            assert_eq!(row.chars().count(), columns, "{args:?}");
            assert!(row
                .chars()
                .all(|ch| ('\u{2800}'..='\u{28ff}').contains(&ch)));
        }
    }
}

#[test]
fn skyline_geometry() {
    let s = TestServer::start();
    let mut c = s.raw();
    const CELLS: [&str; 4] = ["0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"];
    let cells = |row: &str| -> Vec<usize> {
        row.split("\x1b[0m")
            .filter(|cell| !cell.is_empty())
            .map(|cell| {
                let code = cell
                    .strip_prefix("\x1b[")
                    .and_then(|c| c.strip_suffix(' '))
                    .expect("a coloured cell");
                CELLS
                    .iter()
                    .position(|&k| k == code)
                    .expect("a known colour")
            })
            .collect()
    };
    for (args, columns, rows) in [
        (&["LOLWUT", "VERSION", "6"][..], 80, 20),
        (&["LOLWUT", "VERSION", "6", "30", "10"], 30, 10),
        (&["LOLWUT", "VERSION", "6", "0", "0"], 1, 1),
    ] {
        let text = art(&mut c, args);
        let drawing = text.strip_suffix(SKYLINE).expect("the caption");
        let lines: Vec<&str> = drawing.split('\n').collect();
        assert_eq!(lines.len(), rows, "{args:?}");
        let grid: Vec<Vec<usize>> = lines.iter().map(|l| cells(l)).collect();
        assert!(grid.iter().all(|r| r.len() == columns), "{args:?}");
        // The sky is white at the top; the ground row is built on.
        assert!(grid[0].iter().all(|&p| p == 3), "{args:?}");
        if rows > 2 {
            assert!(grid[rows - 1].iter().any(|&p| p != 3), "{args:?}");
        }
    }
    // One row: only sky.
    let text = art(&mut c, &["LOLWUT", "VERSION", "6", "5", "1"]);
    let white = "\x1b[0;97;107m \x1b[0m";
    assert_eq!(text, format!("{}{SKYLINE}", white.repeat(5)));
}
