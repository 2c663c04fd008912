//! The `scripts` family: EVAL/EVALSHA/EVAL_RO/SCRIPT and FUNCTION/FCALL over a corpus of
//! real-world scripts (rate limiter, lock with token, queue move, counters, JSON/msgpack/struct/bit
//! users, scripts that fail in the various ways Redis reports) with random keys and arguments;
//! generated `#!` lines; and now and then INFO errorstats, so that every error reply of the
//! stream must have been counted alike.

use super::gen::*;
use rand::rngs::StdRng;
use rand::Rng;

pub const FAMILY: Family = Family {
    name: "scripts",
    gen,
};

const KEYS: &[&str] = &[
    "sc:a", "sc:b", "sc:c", "{sc}:q1", "{sc}:q2", "sc:h", "sc:lock",
];

/// (script, number of keys it expects, argument kinds: 'n' number, 's' short string, 't' token,
/// 'm' milliseconds far in the future).
const CORPUS: &[(&str, usize, &str)] = &[
    // Fixed-window rate limiter.
    ("local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end if c > tonumber(ARGV[2]) then return 0 end return 1", 1, "mn"),
    // Lock with a token: acquire, release only when the token matches, extend.
    ("if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 else return 0 end", 1, "tm"),
    ("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end", 1, "t"),
    ("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end", 1, "tm"),
    // Reliable queue: move one job and count it.
    ("local v = redis.call('RPOPLPUSH', KEYS[1], KEYS[2]) if v then redis.call('HINCRBY', KEYS[1] .. ':stats', 'moved', 1) end return v", 2, ""),
    ("return redis.call('LPUSH', KEYS[1], ARGV[1], ARGV[2])", 1, "ss"),
    ("local n = redis.call('LLEN', KEYS[1]) local items = redis.call('LRANGE', KEYS[1], 0, -1) return {n, items}", 1, ""),
    // Counters.
    ("return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", 1, "sn"),
    ("return {redis.call('INCRBY', KEYS[1], ARGV[1]), redis.call('GET', KEYS[1])}", 1, "n"),
    ("local t = {} for i = 1, tonumber(ARGV[1]) % 5 do t[i] = redis.call('INCR', KEYS[1]) end return t", 1, "n"),
    ("return redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])", 1, "n"),
    // Reads and conversions.
    ("return redis.call('GET', KEYS[1])", 1, ""),
    ("return redis.call('HGETALL', KEYS[1])", 1, ""),
    ("redis.setresp(3) return redis.call('HGETALL', KEYS[1])", 1, ""),
    ("redis.setresp(3) local r = redis.call('GET', KEYS[1]) return r == nil", 1, ""),
    ("return redis.call('EXISTS', KEYS[1], KEYS[2])", 2, ""),
    ("return {1, 'two', {3, {4}}, redis.status_reply('FIVE'), 6.9, true, false}", 0, ""),
    ("return {double = tonumber(ARGV[1])}", 0, "n"),
    ("return tonumber(ARGV[1]) * 3", 0, "n"),
    ("return redis.call('TYPE', KEYS[1])", 1, ""),
    ("return redis.call('PING')", 0, ""),
    // Numbers as command arguments (sent as %.17g prints them).
    ("redis.call('SET', KEYS[1], tonumber(ARGV[1]) / 3) return redis.call('GET', KEYS[1])", 1, "n"),
    ("redis.call('SET', KEYS[1], 1e20, 'PX', 1e8) return {redis.call('GET', KEYS[1]), redis.call('INCRBYFLOAT', KEYS[1], 0.1)}", 1, ""),
    ("return redis.call('LPUSH', KEYS[1], 0.1, -0.0, 2^53, 1/0, tonumber(ARGV[1]))", 1, "n"),
    ("return redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) / 7, 'm') ", 1, "n"),
    // Failing scripts.
    ("return redis.call('LPUSH', KEYS[1], 'x')", 1, ""),
    ("return redis.pcall('INCR', KEYS[1])", 1, ""),
    ("local r = redis.pcall('HSET', KEYS[1], 'f', 'v') if type(r) == 'table' and r.err then return 'failed: ' .. r.err end return r", 1, ""),
    ("error('custom failure')", 0, ""),
    ("error({err = 'MYERR something'})", 0, ""),
    ("return redis.error_reply('E1 boom')", 0, ""),
    ("return redis.error_reply(ARGV[1])", 0, "s"),
    // Redis's math.random: one process-wide rand48 sequence, Lua 5.1's argument checks.
    ("return {math.random(tonumber(ARGV[1]) - 20), tostring(math.random())}", 0, "n"),
    ("return math.random(ARGV[1], 50)", 0, "n"),
    ("redis.log(redis.LOG_DEBUG)", 0, ""),
    ("redis.setresp(tonumber(ARGV[1]))", 0, "n"),
    ("local ok, e = pcall(function() error({err = ARGV[1]}) end) return {tostring(ok), type(e), e}", 0, "s"),
    ("local ok, e = coroutine.resume(coroutine.create(function() redis.call('INCR', KEYS[1]) end)) return {tostring(ok), type(e) == 'table' and e.err or 'none'}", 1, ""),
    ("local ok, e = xpcall(function() return redis.call('LPUSH', KEYS[1], 'x') end, function(x) return x end) return {tostring(ok), type(e) == 'table' and e.err or e}", 1, ""),
    ("return {err = 'plain'}", 0, ""),
    // Helper errors as tables; errors in loadstring chunks (tail-called too); acl_check_cmd.
    ("return {xpcall(function() redis.setresp(tonumber(ARGV[1])) end, function(e) return type(e) == 'table' and e.err or type(e) end)}", 0, "n"),
    ("local ok, e = coroutine.resume(coroutine.create(function() return redis.sha1hex() end)) return {tostring(ok), type(e) == 'table' and e.err or type(e)}", 0, ""),
    ("local f = loadstring('return redis.call(\"INCR\", \"' .. KEYS[1] .. '\")') return f()", 1, ""),
    ("local f = loadstring('error(\"in chunk\")') f()", 0, ""),
    ("return redis.acl_check_cmd(ARGV[1])", 0, "c"),
    ("return redis.acl_check_cmd('config', ARGV[1])", 0, "c"),
    ("local t = {} local cur = t for i = 1, 100 + tonumber(ARGV[1]) % 300 do cur[1] = {} cur = cur[1] end return t", 0, "n"),
    ("return redis.call('NOSUCHCOMMAND')", 0, ""),
    ("return redis.call('GET')", 0, ""),
    ("return redis.call('SET', KEYS[1], {})", 1, ""),
    ("return undefined_global", 0, ""),
    ("x = 5", 0, ""),
    ("return 1 +", 0, ""),
    ("#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], '1')", 1, ""),
    ("#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", 1, ""),
    ("#!lua flags=nope\nreturn 1", 0, ""),
    // Libraries.
    ("return cjson.encode({key = KEYS[1], n = tonumber(ARGV[1]), list = {1, 2, 3}})", 1, "n"),
    ("local t = cjson.decode(ARGV[1]) return {t.a, t.b}", 0, "j"),
    ("return cmsgpack.unpack(cmsgpack.pack({1, 2, ARGV[1]}))", 0, "s"),
    ("return struct.unpack('>I2', struct.pack('>I2', tonumber(ARGV[1]) % 65536))", 0, "n"),
    ("return bit.bxor(tonumber(ARGV[1]), 255)", 0, "n"),
    ("return bit.tohex(tonumber(ARGV[1]))", 0, "n"),
    ("return redis.sha1hex(ARGV[1])", 0, "s"),
    ("return string.format('%5.2f|%s', tonumber(ARGV[1]), ARGV[1])", 0, "n"),
    ("return table.concat({KEYS[1], ARGV[1]}, ',')", 1, "s"),
];

const LIBRARY: &str = "#!lua name=difflib\nredis.register_function('df_incr', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\nredis.register_function{function_name='df_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\nredis.register_function('df_fail', function(keys) return redis.call('LPUSH', keys[1], 'x') end)";

fn arg(rng: &mut StdRng, kind: char) -> String {
    match kind {
        'n' => match rng.gen_range(0..10) {
            0 => "1.5".into(),
            1 => "-3".into(),
            2 => "notanumber".into(),
            _ => rng.gen_range(0..200).to_string(),
        },
        't' => pick(rng, &["tok1", "tok2"]).to_string(),
        'c' => pick(
            rng,
            &["get", "SET", "get", "nosuch", "", "client", "CONFIG"],
        )
        .to_string(),
        'm' => rng.gen_range(100_000_000..200_000_000u64).to_string(),
        'j' => pick(
            rng,
            &[
                "{\"a\":1,\"b\":\"x\"}",
                "{\"a\":[1,2],\"b\":null}",
                "[1,2",
                "{\"a\":1.5e3,\"b\":true}",
            ],
        )
        .to_string(),
        _ => pick(rng, &["v", "w", "", "a b", "12"]).to_string(),
    }
}

fn script_cmd(rng: &mut StdRng) -> Cmd {
    let (body, nkeys, kinds) = *pick(rng, CORPUS);
    let ro = chance(rng, 0.1);
    let mut b = cmd(rng, if ro { "EVAL_RO" } else { "EVAL" })
        .arg(body)
        .arg(nkeys.to_string());
    for _ in 0..nkeys {
        b = b.arg(pick(rng, KEYS));
    }
    for k in kinds.chars() {
        b = b.arg(arg(rng, k));
    }
    b.exact()
}

fn evalsha(rng: &mut StdRng) -> Cmd {
    let (body, nkeys, kinds) = *pick(rng, CORPUS);
    let sha = sha1_hex(body.as_bytes());
    let mut b = cmd(rng, "EVALSHA").arg(sha).arg(nkeys.to_string());
    for _ in 0..nkeys {
        b = b.arg(pick(rng, KEYS));
    }
    for k in kinds.chars() {
        b = b.arg(arg(rng, k));
    }
    b.exact()
}

fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

fn script_admin(rng: &mut StdRng) -> Cmd {
    match rng.gen_range(0..6) {
        0 => {
            let (body, _, _) = *pick(rng, CORPUS);
            cmd(rng, "SCRIPT").opt(rng, "LOAD").arg(body).exact()
        }
        1 => {
            let a = sha1_hex(pick(rng, CORPUS).0.as_bytes());
            cmd(rng, "SCRIPT")
                .opt(rng, "EXISTS")
                .arg(a)
                .arg("ffffffffffffffffffffffffffffffffffffffff")
                .exact()
        }
        2 if chance(rng, 0.2) => cmd(rng, "SCRIPT").opt(rng, "FLUSH").exact(),
        3 => cmd(rng, "EVAL")
            .arg("return 1")
            .arg(pick(rng, &["-1", "5", "x"]))
            .exact(),
        _ => cmd(rng, "EVALSHA")
            .arg("0000000000000000000000000000000000000000")
            .arg("0")
            .exact(),
    }
}

fn functions(rng: &mut StdRng) -> Cmd {
    match rng.gen_range(0..8) {
        0 => cmd(rng, "FUNCTION")
            .opt(rng, "LOAD")
            .opt(rng, "REPLACE")
            .arg(LIBRARY)
            .exact(),
        1 => cmd(rng, "FUNCTION").opt(rng, "LOAD").arg(LIBRARY).exact(),
        2 if chance(rng, 0.3) => cmd(rng, "FUNCTION")
            .opt(rng, "DELETE")
            .arg("difflib")
            .exact(),
        3 => cmd(rng, "FCALL_RO")
            .arg("df_get")
            .arg("1")
            .arg(pick(rng, KEYS))
            .exact(),
        4 => cmd(rng, "FCALL")
            .arg("df_fail")
            .arg("1")
            .arg(pick(rng, KEYS))
            .exact(),
        5 => cmd(rng, "FCALL_RO")
            .arg("df_incr")
            .arg("1")
            .arg(pick(rng, KEYS))
            .arg("1")
            .exact(),
        _ => cmd(rng, "FCALL")
            .arg("df_incr")
            .arg("1")
            .arg(pick(rng, KEYS))
            .arg(arg(rng, 'n'))
            .exact(),
    }
}

fn plain(rng: &mut StdRng) -> Cmd {
    let k = pick(rng, KEYS);
    match rng.gen_range(0..5) {
        0 => cmd(rng, "SET").arg(k).arg(arg(rng, 'n')).exact(),
        1 => cmd(rng, "DEL").arg(k).exact(),
        2 => cmd(rng, "RPUSH").arg(k).arg(arg(rng, 's')).exact(),
        3 => cmd(rng, "HSET").arg(k).arg("f").arg(arg(rng, 'n')).exact(),
        _ => cmd(rng, "GET").arg(k).exact(),
    }
}

/// EVAL with a generated `#!` line: engines, separators, quoting, flag lists (empty names
/// included), line endings (none, CRLF, NUL before the newline).
fn shebang(rng: &mut StdRng) -> Cmd {
    let engine = *pick(
        rng,
        &[
            "#!lua", "#!lua", "#!lua", "#! lua", "#!LUA", "#!python", "#!",
        ],
    );
    let mut line = engine.to_string();
    for _ in 0..rng.gen_range(0..3) {
        let sep = *pick(rng, &[" ", " ", "\t", "  "]);
        line.push_str(sep);
        let option = *pick(
            rng,
            &[
                "flags=no-writes",
                "flags=allow-oom",
                "flags=no-writes,allow-oom",
                "flags=",
                "flags=,",
                "flags=no-writes,",
                "flags=bogus",
                "\"flags=no-writes\"",
                "flags=\"allow-stale\"",
                "'flags=no-cluster'",
                "flags=\"unbalanced",
                "foo=bar",
                "name=x",
            ],
        );
        line.push_str(option);
    }
    let end = *pick(rng, &["\n", "\n", "\n", "\r\n", "", "\0\n", " \n"]);
    line.push_str(end);
    let body = *pick(
        rng,
        &[
            "return 1",
            "return redis.call('set', KEYS[1], 'v')",
            "return redis.call('get', KEYS[1])",
        ],
    );
    line.push_str(body);
    let name = if chance(rng, 0.2) { "EVAL_RO" } else { "EVAL" };
    cmd(rng, name)
        .arg(line)
        .arg("1")
        .arg(*pick(rng, KEYS))
        .exact()
}

/// The error statistics so far: every error reply of the stream, script or not, must have been
/// counted under the same code on both servers.
fn errorstats(rng: &mut StdRng) -> Cmd {
    cmd(rng, "INFO").arg("errorstats").fixed()
}

fn gen(rng: &mut StdRng, ctx: &Ctx) -> Cmd {
    weighted(
        rng,
        ctx,
        &[
            (50, |r, _| script_cmd(r)),
            (15, |r, _| evalsha(r)),
            (5, |r, _| script_admin(r)),
            (12, |r, _| functions(r)),
            (18, |r, _| plain(r)),
            (6, |r, _| shebang(r)),
            (1, |r, _| errorstats(r)),
        ],
    )
}
