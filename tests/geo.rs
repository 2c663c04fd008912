//! Geo commands through a real client: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH(STORE) and
//! the GEORADIUS family, every option and error, on both sorted-set encodings, in RESP2 and
//! RESP3. The expected replies are redis-server 7.0's, byte for byte (run with
//! `TESSERA_TEST_TARGET=redis` to check them against it): distances with 4 decimals,
//! coordinates with up to 17, hashes as integers.

mod common;

use common::{fmt_frame, Frame, RawClient, TestServer};

/// Runs `script` (commands split on spaces, expected replies as `fmt_frame` prints them).
/// `skip_encoding` leaves out OBJECT ENCODING checks (for the runs on the other encoding).
fn run(r: &mut RawClient, script: &[(&str, &str)], skip_encoding: bool) {
    let mut errors = Vec::new();
    for (cmd, want) in script {
        if skip_encoding && cmd.starts_with("OBJECT ENCODING") {
            continue;
        }
        let args: Vec<&str> = cmd.split(' ').collect();
        let got = fmt_frame(&r.call(&args));
        if got != *want {
            errors.push(format!("{cmd}\n  got:  {got}\n  want: {want}"));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Runs `script` on a fresh server with the default thresholds (small sets are listpacks), then
/// on one where every sorted set is a skiplist.
fn run_on_both_encodings(script: &[(&str, &str)]) {
    for entries in ["128", "0"] {
        let s = TestServer::start();
        let mut r = s.raw();
        r.call(&["CONFIG", "SET", "zset-max-listpack-entries", entries]);
        run(&mut r, script, entries == "0");
    }
}

fn resp3(s: &TestServer) -> RawClient {
    let mut r = s.raw();
    match r.call(&["HELLO", "3"]) {
        Frame::Map(_) => r,
        other => panic!("HELLO 3 answered {}", fmt_frame(&other)),
    }
}

#[test]
fn geoadd_options_and_errors() {
    run_on_both_encodings(GEOADD_SCRIPT);
}

#[test]
fn geopos_geohash_geodist() {
    run_on_both_encodings(READ_SCRIPT);
}

#[test]
fn georadius_family() {
    run_on_both_encodings(RADIUS_SCRIPT);
}

#[test]
fn geosearch_and_geosearchstore() {
    run_on_both_encodings(SEARCH_SCRIPT);
}

#[test]
fn resp3_replies() {
    let s = TestServer::start();
    let mut r = resp3(&s);
    run(&mut r, RESP3_SCRIPT, false);
}

#[test]
fn stored_results_take_the_small_encoding_when_they_fit() {
    let s = TestServer::start();
    let mut r = s.raw();
    let mut add = vec!["GEOADD".to_string(), "big".to_string()];
    for i in 0..200 {
        add.push(format!("{}", 10.0 + (i % 20) as f64 * 0.01));
        add.push(format!("{}", 45.0 + (i / 20) as f64 * 0.01));
        add.push(format!("m{i}"));
    }
    assert_eq!(r.call(&add), Frame::Integer(200));
    assert_eq!(
        fmt_frame(&r.call(&["OBJECT", "ENCODING", "big"])),
        r#""skiplist""#
    );
    let cases = [
        ("5", ":5", r#""listpack""#),
        ("200", ":200", r#""skiplist""#),
    ];
    for (count, n, enc) in cases {
        let got = r.call(&[
            "GEOSEARCHSTORE",
            "dst",
            "big",
            "FROMLONLAT",
            "10.1",
            "45.05",
            "BYBOX",
            "100",
            "100",
            "km",
            "COUNT",
            count,
        ]);
        assert_eq!(fmt_frame(&got), n);
        assert_eq!(fmt_frame(&r.call(&["OBJECT", "ENCODING", "dst"])), enc);
    }
    // A long member makes even a short result a skiplist.
    let long = "x".repeat(100);
    r.call(&["GEOADD", "one", "1", "1", &long]);
    assert_eq!(
        fmt_frame(&r.call(&["GEORADIUS", "one", "1", "1", "10", "km", "STORE", "dst"])),
        ":1"
    );
    assert_eq!(
        fmt_frame(&r.call(&["OBJECT", "ENCODING", "dst"])),
        r#""skiplist""#
    );
    // Storing over a key with a TTL leaves none.
    r.call(&["EXPIRE", "dst", "1000"]);
    r.call(&[
        "GEOSEARCHSTORE",
        "dst",
        "one",
        "FROMMEMBER",
        &long,
        "BYRADIUS",
        "1",
        "m",
    ]);
    assert_eq!(r.call(&["TTL", "dst"]), Frame::Integer(-1));
}

/// Reads keyevent notifications up to the one for key `end`.
fn events_until_end(sub: &mut RawClient) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let Frame::Array(items) = sub.read_frame() else {
            panic!("expected a pmessage")
        };
        let (Some(Frame::Bulk(chan)), Some(Frame::Bulk(key))) = (items.get(2), items.get(3)) else {
            panic!("bad pmessage {items:?}")
        };
        let ev = String::from_utf8_lossy(chan)
            .rsplit(':')
            .next()
            .unwrap()
            .to_string();
        let key = String::from_utf8_lossy(key).to_string();
        if key == "end" {
            return got;
        }
        got.push(format!("{ev} {key}"));
    }
}

#[test]
fn writes_notify_like_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = s.raw();
    sub.call(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for cmd in [
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD g 13.361389 38.115556 Palermo",
        "GEOADD g XX 1 1 nobody",
        "GEOADD g XX CH 1 1 Palermo",
        "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 200 km",
        "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 1 m",
        "GEOSEARCHSTORE d g FROMLONLAT 15 37 BYRADIUS 1 m",
        "GEORADIUS g 15 37 200 km STORE d2",
        "GEORADIUSBYMEMBER g Catania 200 km STOREDIST d2",
        "GEOSEARCHSTORE d2 nokey FROMLONLAT 15 37 BYRADIUS 1 m",
        "GEORADIUS nokey 15 37 1 km STORE d2",
        "GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km",
        "GEOPOS g Palermo",
        "SET end 1",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        c.call(&args);
    }
    assert_eq!(
        events_until_end(&mut sub),
        [
            "zadd g",
            "zadd g",
            "geosearchstore d",
            "del d",
            "georadiusstore d2",
            "georadiusstore d2",
            "del d2",
        ]
    );
}

#[test]
fn command_getkeys_finds_store_keys() {
    let s = TestServer::start();
    let mut r = s.raw();
    for (cmd, want) in [
        (
            "GEORADIUS k 0 0 1 m STORE a STOREDIST b",
            r#"["k", "a", "b"]"#,
        ),
        ("GEORADIUS k 0 0 1 m STORE a STORE b", r#"["k", "a"]"#),
        ("GEORADIUS k 0 0 1 m COUNT 1 STORE", r#"["k"]"#),
        ("GEORADIUS k 0 0 1 m", r#"["k"]"#),
        ("GEORADIUSBYMEMBER k m 1 m storedist a", r#"["k", "a"]"#),
        ("GEORADIUS_RO k 0 0 1 m STORE a", r#"["k"]"#),
        (
            "GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 m",
            r#"["d", "s"]"#,
        ),
        ("GEOSEARCH s FROMMEMBER m BYRADIUS 1 m", r#"["s"]"#),
        ("GEOADD k 1 1 m", r#"["k"]"#),
        ("GEODIST k a b", r#"["k"]"#),
    ] {
        let mut args = vec!["COMMAND", "GETKEYS"];
        args.extend(cmd.split(' '));
        assert_eq!(fmt_frame(&r.call(&args)), want, "{cmd}");
    }
}

/// A deterministic stream of points over the whole storable area.
fn points(n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let lon = next() * 360.0 - 180.0;
            let lat = next() * 170.0 - 85.0;
            (lon, lat)
        })
        .collect()
}

fn bulk_str(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a bulk string, got {}", fmt_frame(other)),
    }
}

/// Searches find exactly the members GEODIST puts inside the radius (away from the boundary),
/// in distance order with ASC, and COUNT returns a prefix of the sorted result.
#[test]
fn radius_searches_agree_with_geodist() {
    let s = TestServer::start();
    let mut r = s.raw();
    let pts = points(400, 0x9e37_79b9_7f4a_7c15);
    let mut add = vec!["GEOADD".to_string(), "w".to_string()];
    for (i, (lon, lat)) in pts.iter().enumerate() {
        add.extend([lon.to_string(), lat.to_string(), format!("p{i}")]);
    }
    assert_eq!(r.call(&add), Frame::Integer(400));
    for (center, radius_km) in [(0usize, 3000.0f64), (7, 500.0), (42, 8000.0), (99, 20000.0)] {
        let member = format!("p{center}");
        let radius = radius_km.to_string();
        let reply = r.call(&[
            "GEOSEARCH",
            "w",
            "FROMMEMBER",
            &member,
            "BYRADIUS",
            &radius,
            "km",
            "ASC",
            "WITHDIST",
        ]);
        let Frame::Array(items) = reply else {
            panic!("GEOSEARCH answered {}", fmt_frame(&reply))
        };
        let found: Vec<(String, f64)> = items
            .iter()
            .map(|it| match it {
                Frame::Array(pair) => (bulk_str(&pair[0]), bulk_str(&pair[1]).parse().unwrap()),
                other => panic!("bad item {}", fmt_frame(other)),
            })
            .collect();
        assert!(
            found.windows(2).all(|w| w[0].1 <= w[1].1),
            "not in ASC order"
        );
        for i in 0..pts.len() {
            let m = format!("p{i}");
            let d: f64 = bulk_str(&r.call(&["GEODIST", "w", &member, &m, "km"]))
                .parse()
                .unwrap();
            let hit = found.iter().any(|(f, _)| *f == m);
            if d < radius_km - 0.01 {
                assert!(
                    hit,
                    "{m} at {d} km from {member} not found within {radius_km}"
                );
            } else if d > radius_km + 0.01 {
                assert!(!hit, "{m} at {d} km from {member} found within {radius_km}");
            }
        }
        let top = r.call(&[
            "GEOSEARCH",
            "w",
            "FROMMEMBER",
            &member,
            "BYRADIUS",
            &radius,
            "km",
            "COUNT",
            "5",
            "WITHDIST",
        ]);
        let Frame::Array(top) = top else { panic!() };
        assert_eq!(top.len(), found.len().min(5));
        for (t, f) in top.iter().zip(&found) {
            let Frame::Array(pair) = t else { panic!() };
            assert_eq!(bulk_str(&pair[1]).parse::<f64>().unwrap(), f.1);
        }
    }
}

const GEOADD_SCRIPT: &[(&str, &str)] = &[
    (
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        r#":2"#,
    ),
    (
        "ZRANGE g 0 -1 WITHSCORES",
        r#"["Palermo", "3479099956230698", "Catania", "3479447370796909"]"#,
    ),
    ("TYPE g", r#"+zset"#),
    ("OBJECT ENCODING g", r#""listpack""#),
    ("GEOADD g 13.361389 38.115556 Palermo", r#":0"#),
    (
        "GEOADD g CH 13.361389 38.115556 Palermo 13.4 38.1 Palermo",
        r#":1"#,
    ),
    ("GEOADD g NX 1 1 Palermo 2 2 Rome", r#":1"#),
    ("GEOADD g NX CH 1 1 Palermo 2 2 Rome", r#":0"#),
    ("GEOADD g XX 1 1 Palermo 3 3 Paris", r#":0"#),
    ("GEOADD g XX CH 1 1 Palermo 3 3 Paris", r#":0"#),
    ("GEOADD g xx ch nx 1 1 a", r#"-ERR syntax error"#),
    ("GEOADD g ch ch ch", r#"-ERR syntax error"#),
    ("GEOADD g CH XX 1 1 Palermo", r#":0"#),
    ("GEOADD g2 XX 1 1 a", r#":0"#),
    ("EXISTS g2", r#":0"#),
    (
        "GEOADD g 180 85.05112878 edge1 -180 -85.05112878 edge2 0 0 zero",
        r#":3"#,
    ),
    (
        "ZRANGE g 0 -1 WITHSCORES",
        r#"["edge2", "0", "zero", "3377699720527872", "Palermo", "3377822707026402", "Rome", "3378191666521995", "Catania", "3479447370796909", "edge1", "13510798882111488"]"#,
    ),
    (
        "GEOPOS g edge1 edge2 zero",
        r#"[["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112751263942528"], ["0.00000268220901489", "0.00000126736058093"]]"#,
    ),
    (
        "GEOADD g 180.0000001 0 x",
        r#"-ERR invalid longitude,latitude pair 180.000000,0.000000"#,
    ),
    (
        "GEOADD g 0 85.05112879 x",
        r#"-ERR invalid longitude,latitude pair 0.000000,85.051129"#,
    ),
    (
        "GEOADD g 200 100 x",
        r#"-ERR invalid longitude,latitude pair 200.000000,100.000000"#,
    ),
    (
        "GEOADD g -200 -100 x",
        r#"-ERR invalid longitude,latitude pair -200.000000,-100.000000"#,
    ),
    (
        "GEOADD g 1e300 0 x",
        r#"-ERR invalid longitude,latitude pair 1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.000000,0.000000"#,
    ),
    (
        "GEOADD g inf 0 x",
        r#"-ERR invalid longitude,latitude pair inf,0.000000"#,
    ),
    (
        "GEOADD g 0 -inf x",
        r#"-ERR invalid longitude,latitude pair 0.000000,-inf"#,
    ),
    ("GEOADD g abc 0 x", r#"-ERR value is not a valid float"#),
    ("GEOADD g 0 abc x", r#"-ERR value is not a valid float"#),
    ("GEOADD g 0 nan x", r#"-ERR value is not a valid float"#),
    (
        "GEOADD g 0 0",
        r#"-ERR wrong number of arguments for 'geoadd' command"#,
    ),
    ("GEOADD g 0 0 a 1", r#"-ERR syntax error"#),
    ("GEOADD g GT 1 a", r#"-ERR value is not a valid float"#),
    ("GEOADD g GT 1 2 a", r#"-ERR syntax error"#),
    (
        "GEOADD g 1 2 a 200 0 b",
        r#"-ERR invalid longitude,latitude pair 200.000000,0.000000"#,
    ),
    ("EXISTS b", r#":0"#),
    ("ZSCORE g a", r#"(nil)"#),
    ("SET s x", r#"+OK"#),
    (
        "GEOADD s 1 2 a",
        r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#,
    ),
    (
        "GEOADD s 200 2 a",
        r#"-ERR invalid longitude,latitude pair 200.000000,2.000000"#,
    ),
    ("GEOADD s xx nx 1 2 a", r#"-ERR syntax error"#),
    (
        "GEOADD s",
        r#"-ERR wrong number of arguments for 'geoadd' command"#,
    ),
    (
        "GEOADD s 1 2",
        r#"-ERR wrong number of arguments for 'geoadd' command"#,
    ),
];

const READ_SCRIPT: &[(&str, &str)] = &[
    ("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania", r#":2"#),
    ("GEOPOS Sicily Palermo NonExisting Catania", r#"[["13.36138933897018433", "38.11555639549629859"], (nil array), ["15.08726745843887329", "37.50266842333162032"]]"#),
    ("GEOPOS Sicily", r#"[]"#),
    ("GEOPOS nokey a b", r#"[(nil array), (nil array)]"#),
    ("GEOHASH Sicily Palermo Catania x", r#"["sqc8b49rny0", "sqdtr74hyu0", (nil)]"#),
    ("GEOHASH Sicily", r#"[]"#),
    ("GEOHASH nokey a", r#"[(nil)]"#),
    ("GEODIST Sicily Palermo Catania", r#""166274.1516""#),
    ("GEODIST Sicily Palermo Catania m", r#""166274.1516""#),
    ("GEODIST Sicily Palermo Catania KM", r#""166.2742""#),
    ("GEODIST Sicily Palermo Catania ft", r#""545518.8700""#),
    ("GEODIST Sicily Palermo Catania Mi", r#""103.3182""#),
    ("GEODIST Sicily Palermo Catania yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEODIST Sicily Palermo Catania km extra", r#"-ERR syntax error"#),
    ("GEODIST nokey a b km extra", r#"-ERR syntax error"#),
    ("GEODIST nokey a b yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEODIST nokey a b", r#"(nil)"#),
    ("GEODIST Sicily Palermo x", r#"(nil)"#),
    ("GEODIST Sicily x Palermo", r#"(nil)"#),
    ("GEODIST Sicily Palermo Palermo", r#""0.0000""#),
    ("SET s x", r#"+OK"#),
    ("GEOPOS s a", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEOHASH s a", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEODIST s a b", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEODIST s a b km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEODIST s a b yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEOADD w 179.9999 0 east -179.9999 0 west 0 85 north 0 -85 south 0 0.0001 z1 0 -0.0001 z2", r#":6"#),
    ("GEODIST w east west", r#""22.0766""#),
    ("GEODIST w north south km", r#""18908.4709""#),
    ("GEODIST w z1 z2", r#""22.2723""#),
    ("GEODIST w north north", r#""0.0000""#),
    ("GEOPOS w east west north south z1 z2", r#"[["179.99990075826644897", "0.00000126736058093"], ["-179.99990075826644897", "0.00000126736058093"], ["0.00000268220901489", "84.99999965213439168"], ["0.00000268220901489", "-84.99999965213439168"], ["0.00000268220901489", "0.00010012148579364"], ["0.00000268220901489", "-0.00010012148579364"]]"#),
    ("GEOHASH w east west north south z1 z2", r#"["xbpbpbpbj80", "80000000420", "up0581b0bh0", "h0bh2n0p050", "s0000000840", "kpbpbpbp2j0"]"#),
    ("ZADD w 1e300 big -5 neg inf pinf -inf ninf 1e19 e19 1.5 frac 4611686018427387904 p62 9007199254740992 p53", r#":8"#),
    ("GEOPOS w big neg pinf ninf e19 frac p62 p53", r#"[["-179.99999731779098511", "-85.05112751263942528"], ["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112751263942528"], ["180", "-85.05112751263942528"], ["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112497791824921"], ["-179.99999731779098511", "85.0511287799999991"], ["180", "-85.05112751263942528"]]"#),
    ("GEOHASH w big neg pinf ninf e19 frac p62 p53", r#"["00bh0hbj200", "bp05b5048p0", "00bh0hbj200", "00bh0hbj200", "bp05b5048p0", "00bh0hbj210", "bp05b5048p0", "00bh0hbj200"]"#),
    ("GEODIST w big neg", r#""18919844.5891""#),
    ("GEODIST w ninf p53 ft", r#""0.0000""#),
    // 44736467.060850002 ft: fixed-point rounding of the value times 10^4
    // (ties to even) gives .0608 where printf's %.4f would give .0609.
    ("ZADD tie 611300666944220 a 3479484749105832 b", r#":2"#),
    ("GEODIST tie a b ft", r#""44736467.0608""#),
    ("GEORADIUSBYMEMBER tie a 1e12 ft WITHDIST ASC", r#"[["a", "0.0000"], ["b", "44736467.0608"]]"#),
];

const RADIUS_SCRIPT: &[(&str, &str)] = &[
    ("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 13.583333 37.316667 Agrigento 12.758489 38.788135 edge1 17.241510 38.788135 edge2", r#":5"#),
    ("GEORADIUS Sicily 15 37 200 km", r#"["Agrigento", "Palermo", "Catania"]"#),
    ("GEORADIUS Sicily 15 37 200 km ASC", r#"["Catania", "Agrigento", "Palermo"]"#),
    ("GEORADIUS Sicily 15 37 200 km DESC", r#"["Palermo", "Agrigento", "Catania"]"#),
    ("GEORADIUS Sicily 15 37 200 km WITHDIST", r#"[["Agrigento", "130.4235"], ["Palermo", "190.4424"], ["Catania", "56.4413"]]"#),
    ("GEORADIUS Sicily 15 37 200 km WITHCOORD", r#"[["Agrigento", ["13.5833314061164856", "37.31666804993816555"]], ["Palermo", ["13.36138933897018433", "38.11555639549629859"]], ["Catania", ["15.08726745843887329", "37.50266842333162032"]]]"#),
    ("GEORADIUS Sicily 15 37 200 km WITHHASH", r#"[["Agrigento", :3479030013248308], ["Palermo", :3479099956230698], ["Catania", :3479447370796909]]"#),
    ("GEORADIUS Sicily 15 37 200 km withhash withcoord withdist", r#"[["Agrigento", "130.4235", :3479030013248308, ["13.5833314061164856", "37.31666804993816555"]], ["Palermo", "190.4424", :3479099956230698, ["13.36138933897018433", "38.11555639549629859"]], ["Catania", "56.4413", :3479447370796909, ["15.08726745843887329", "37.50266842333162032"]]]"#),
    ("GEORADIUS Sicily 15 37 200 km WITHDIST COUNT 1", r#"[["Catania", "56.4413"]]"#),
    ("GEORADIUS Sicily 15 37 200 km WITHDIST COUNT 2 DESC", r#"[["Palermo", "190.4424"], ["Agrigento", "130.4235"]]"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT 1 ANY", r#"["Agrigento"]"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT 2 ANY ASC", r#"["Agrigento", "Palermo"]"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT 10 ANY DESC WITHDIST", r#"[["Palermo", "190.4424"], ["Agrigento", "130.4235"], ["Catania", "56.4413"]]"#),
    ("GEORADIUS Sicily 15 37 200 km ANY", r#"-ERR the ANY argument requires COUNT argument"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT 0", r#"-ERR COUNT must be > 0"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT -1", r#"-ERR COUNT must be > 0"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT abc", r#"-ERR value is not an integer or out of range"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT", r#"-ERR syntax error"#),
    ("GEORADIUS Sicily 15 37 200 km ASC DESC WITHDIST", r#"[["Palermo", "190.4424"], ["Agrigento", "130.4235"], ["Catania", "56.4413"]]"#),
    ("GEORADIUS Sicily 15 37 200 km bogus", r#"-ERR syntax error"#),
    ("GEORADIUS Sicily 15 37 200 yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEORADIUS Sicily 15 37 -1 km", r#"-ERR radius cannot be negative"#),
    ("GEORADIUS Sicily 15 37 abc km", r#"-ERR need numeric radius"#),
    ("GEORADIUS Sicily 15 37 abc yards", r#"-ERR need numeric radius"#),
    ("GEORADIUS Sicily 200 37 abc km", r#"-ERR invalid longitude,latitude pair 200.000000,37.000000"#),
    ("GEORADIUS Sicily abc 37 1 km", r#"-ERR value is not a valid float"#),
    ("GEORADIUS Sicily 15 37 0 km", r#"[]"#),
    ("GEORADIUS Sicily 15.087269 37.502669 0 km", r#"[]"#),
    ("GEORADIUS Sicily 15 37 100 mi WITHDIST", r#"[["Agrigento", "81.0416"], ["Catania", "35.0711"]]"#),
    ("GEORADIUS Sicily 15 37 100000 ft WITHDIST", r#"[]"#),
    ("GEORADIUS Sicily 15 37 100000 M WITHDIST", r#"[["Catania", "56441.2579"]]"#),
    ("GEORADIUS Sicily 15 37 1 m", r#"[]"#),
    ("GEORADIUS nokey 15 37 1 m", r#"[]"#),
    ("GEORADIUS nokey 15 37 1 m STORE dst", r#":0"#),
    ("GEORADIUS nokey 15 37 1 yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEORADIUS nokey 200 37 1 m", r#"-ERR invalid longitude,latitude pair 200.000000,37.000000"#),
    ("GEORADIUS Sicily 15 37 200 km STORE dst", r#":3"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Agrigento", "3479030013248308", "Palermo", "3479099956230698", "Catania", "3479447370796909"]"#),
    ("GEORADIUS Sicily 15 37 200 km STOREDIST dst", r#":3"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Catania", "56.441257870158204", "Agrigento", "130.42348706714702", "Palermo", "190.44242984775784"]"#),
    ("GEORADIUS Sicily 15 37 200 km STOREDIST dst STORE dst2", r#":3"#),
    ("EXISTS dst2", r#":1"#),
    ("ZRANGE dst2 0 -1 WITHSCORES", r#"["Agrigento", "3479030013248308", "Palermo", "3479099956230698", "Catania", "3479447370796909"]"#),
    ("GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST", r#"-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("GEORADIUS Sicily 15 37 200 km WITHHASH STORE dst", r#"-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("GEORADIUS Sicily 15 37 200 km COUNT 2 STORE dst", r#":2"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Agrigento", "3479030013248308", "Catania", "3479447370796909"]"#),
    ("GEORADIUS Sicily 15 37 1 m STORE dst", r#":0"#),
    ("EXISTS dst", r#":0"#),
    ("GEORADIUS Sicily 15 37 200 km STORE", r#"-ERR syntax error"#),
    ("GEORADIUS_RO Sicily 15 37 200 km STORE dst", r#"-ERR syntax error"#),
    ("GEORADIUS_RO Sicily 15 37 200 km STOREDIST dst", r#"-ERR syntax error"#),
    ("GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC", r#"[["Catania", "56.4413"], ["Agrigento", "130.4235"], ["Palermo", "190.4424"]]"#),
    ("GEORADIUS_RO nokey 15 37 200 km", r#"[]"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento 100 km", r#"["Agrigento", "Palermo"]"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST WITHCOORD ASC", r#"[["Agrigento", "0.0000", ["13.5833314061164856", "37.31666804993816555"]], ["Palermo", "90.9778", ["13.36138933897018433", "38.11555639549629859"]]]"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento 100 km COUNT 1 WITHDIST", r#"[["Agrigento", "0.0000"]]"#),
    ("GEORADIUSBYMEMBER Sicily nobody 100 km", r#"-ERR could not decode requested zset member"#),
    ("GEORADIUSBYMEMBER Sicily nobody -100 km", r#"-ERR could not decode requested zset member"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento -100 km", r#"-ERR radius cannot be negative"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento 100 yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEORADIUSBYMEMBER nokey nobody -100 yards", r#"[]"#),
    ("GEORADIUSBYMEMBER nokey nobody -100 yards STORE dst", r#":0"#),
    ("GEORADIUSBYMEMBER nokey nobody -100 yards bogus", r#"-ERR syntax error"#),
    ("GEORADIUSBYMEMBER nokey nobody -100 yards WITHDIST STORE dst", r#"-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("GEORADIUSBYMEMBER nokey nobody -100 yards ANY", r#"-ERR the ANY argument requires COUNT argument"#),
    ("GEORADIUSBYMEMBER Sicily Agrigento 100 km STOREDIST dst", r#":2"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Agrigento", "0", "Palermo", "90.977753537996037"]"#),
    ("GEORADIUSBYMEMBER_RO Sicily Agrigento 100 km", r#"["Agrigento", "Palermo"]"#),
    ("GEORADIUSBYMEMBER_RO Sicily Agrigento 100 km STORE dst", r#"-ERR syntax error"#),
    ("SET s x", r#"+OK"#),
    ("GEORADIUS s 15 37 200 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEORADIUS s 200 37 200 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEORADIUSBYMEMBER s a 1 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEORADIUS Sicily 15 37 200 km STORE s", r#":3"#),
    ("TYPE s", r#"+zset"#),
];

const SEARCH_SCRIPT: &[(&str, &str)] = &[
    ("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 13.583333 37.316667 Agrigento 12.758489 38.788135 edge1 17.241510 38.788135 edge2", r#":5"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC", r#"["Catania", "Agrigento", "Palermo"]"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH", r#"[["Catania", "56.4413", :3479447370796909, ["15.08726745843887329", "37.50266842333162032"]], ["Agrigento", "130.4235", :3479030013248308, ["13.5833314061164856", "37.31666804993816555"]], ["Palermo", "190.4424", :3479099956230698, ["13.36138933897018433", "38.11555639549629859"]], ["edge2", "279.7403", :3481342659049484, ["17.24151045083999634", "38.78813451624225195"]], ["edge1", "279.7405", :3479273021651468, ["12.7584877610206604", "38.78813451624225195"]]]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km DESC WITHDIST", r#"[["Catania", "166.2742"], ["edge1", "91.4007"], ["Agrigento", "90.9778"], ["Palermo", "0.0000"]]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 200 200 km", r#"["Agrigento", "Palermo", "edge1"]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 200 200 km COUNT 2 WITHDIST", r#"[["Palermo", "0.0000"], ["Agrigento", "90.9778"]]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 200 200 km COUNT 2 ANY", r#"["Agrigento", "Palermo"]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 0 m WITHDIST", r#"[["Palermo", "0.0000"]]"#),
    ("GEOSEARCH Sicily BYRADIUS 200 km FROMLONLAT 15 37 WITHDIST", r#"[["Agrigento", "130.4235"], ["Palermo", "190.4424"], ["Catania", "56.4413"]]"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 FROMLONLAT 14 37 BYRADIUS 200 km BYRADIUS 100 km WITHDIST", r#"[["Agrigento", "51.0369"]]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 100 km WITHDIST", r#"[["Catania", "0.0000"]]"#),
    ("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 200 km", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 1 1 km", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 km BYRADIUS 200 km", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE dst", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BOGUS", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200", r#"-ERR syntax error"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 BYRADIUS 200 km", r#"-ERR value is not a valid float"#),
    ("GEOSEARCH Sicily BYRADIUS 200 km ASC WITHDIST", r#"-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 ASC WITHDIST", r#"-ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"#),
    ("geosearch Sicily BYRADIUS 200 km ASC WITHDIST", r#"-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch"#),
    ("GeoSearch Sicily FROMLONLAT 15 37 ASC WITHDIST", r#"-ERR exactly one of BYRADIUS and BYBOX can be specified for GeoSearch"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY", r#"-ERR the ANY argument requires COUNT argument"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 0", r#"-ERR COUNT must be > 0"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT x", r#"-ERR value is not an integer or out of range"#),
    ("GEOSEARCH Sicily FROMLONLAT 200 37 BYRADIUS 200 km", r#"-ERR invalid longitude,latitude pair 200.000000,37.000000"#),
    ("GEOSEARCH Sicily FROMLONLAT abc 37 BYRADIUS 200 km", r#"-ERR value is not a valid float"#),
    ("GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS 200 km", r#"-ERR could not decode requested zset member"#),
    ("GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS -1 km", r#"-ERR could not decode requested zset member"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS -1 km", r#"-ERR radius cannot be negative"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS x km", r#"-ERR need numeric radius"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km", r#"-ERR height or width cannot be negative"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 -1 km", r#"-ERR height or width cannot be negative"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x -1 km", r#"-ERR need numeric width"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km", r#"-ERR need numeric height"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 yards", r#"-ERR unsupported unit provided. please use M, KM, FT, MI"#),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1", r#"-ERR syntax error"#),
    ("GEOSEARCH nokey FROMMEMBER nobody BYRADIUS 200 km", r#"[]"#),
    ("GEOSEARCH nokey FROMMEMBER nobody BYBOX 1 1 km WITHDIST COUNT 1 ANY", r#"[]"#),
    ("GEOSEARCH nokey FROMMEMBER nobody BYRADIUS -1 km", r#"-ERR radius cannot be negative"#),
    ("GEOSEARCH nokey FROMLONLAT 200 0 BYRADIUS 1 km", r#"-ERR invalid longitude,latitude pair 200.000000,0.000000"#),
    ("GEOSEARCH nokey FROMMEMBER nobody BYRADIUS 1 km ANY", r#"-ERR the ANY argument requires COUNT argument"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km", r#":3"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Agrigento", "3479030013248308", "Palermo", "3479099956230698", "Catania", "3479447370796909"]"#),
    ("OBJECT ENCODING dst", r#""listpack""#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", r#":3"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["Catania", "56.441257870158204", "Agrigento", "130.42348706714702", "Palermo", "190.44242984775784"]"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST COUNT 2 DESC", r#":2"#),
    ("ZRANGE dst 0 -1 WITHSCORES", r#"["edge2", "279.7403417843143", "edge1", "279.74045213563431"]"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST", r#"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHCOORD", r#"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE x", r#"-ERR syntax error"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 1 m", r#":0"#),
    ("EXISTS dst", r#":0"#),
    ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km", r#":3"#),
    ("GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 200 km", r#":0"#),
    ("EXISTS dst", r#":0"#),
    ("GEOSEARCHSTORE dst nokey FROMMEMBER x BYRADIUS 200 km STOREDIST", r#":0"#),
    ("GEOSEARCHSTORE dst nokey FROMMEMBER x BYRADIUS 200 km WITHDIST", r#"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"#),
    ("geosearchstore dst nokey BYRADIUS 200 km", r#"-ERR wrong number of arguments for 'geosearchstore' command"#),
    ("GEOSEARCHSTORE Sicily Sicily FROMMEMBER Palermo BYRADIUS 100 km", r#":3"#),
    ("ZRANGE Sicily 0 -1 WITHSCORES", r#"["Agrigento", "3479030013248308", "Palermo", "3479099956230698", "edge1", "3479273021651468"]"#),
    ("SET s x", r#"+OK"#),
    ("GEOSEARCH s FROMLONLAT 15 37 BYRADIUS 200 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEOSEARCH s FROMLONLAT 200 37 BYRADIUS 200 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEOSEARCHSTORE dst s FROMLONLAT 15 37 BYRADIUS 200 km", r#"-WRONGTYPE Operation against a key holding the wrong kind of value"#),
    ("GEOSEARCHSTORE s Sicily FROMLONLAT 15 37 BYRADIUS 200 km", r#":2"#),
    ("TYPE s", r#"+zset"#),
];

const RESP3_SCRIPT: &[(&str, &str)] = &[
    (
        "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        r#":2"#,
    ),
    (
        "GEOPOS Sicily Palermo NonExisting",
        r#"[[,13.36138933897018433, ,38.11555639549629859], (null)]"#,
    ),
    ("GEOPOS nokey a", r#"[(null)]"#),
    ("GEOHASH Sicily Palermo x", r#"["sqc8b49rny0", (null)]"#),
    ("GEODIST Sicily Palermo Catania km", r#""166.2742""#),
    ("GEODIST Sicily Palermo x", r#"(null)"#),
    ("GEODIST nokey a b", r#"(null)"#),
    (
        "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC",
        r#"[["Catania", "56.4413", :3479447370796909, [,15.08726745843887329, ,37.50266842333162032]], ["Palermo", "190.4424", :3479099956230698, [,13.36138933897018433, ,38.11555639549629859]]]"#,
    ),
    (
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km DESC WITHCOORD",
        r#"[["Palermo", [,13.36138933897018433, ,38.11555639549629859]], ["Catania", [,15.08726745843887329, ,37.50266842333162032]]]"#,
    ),
    ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km", r#"[]"#),
    ("GEOSEARCH nokey FROMLONLAT 15 37 BYRADIUS 1 km", r#"[]"#),
];
