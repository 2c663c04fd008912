//! SLOWLOG GET, LEN, RESET and HELP (Redis's `slowlog.c`).

use crate::commands::args::int;
use crate::commands::generic::help_reply;
use crate::commands::{CmdError, CmdResult, Ctx};

pub(super) fn slowlog_get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = match args.get(2) {
        None => 10,
        Some(a) => {
            let n = int(a)
                .map_err(|_| CmdError::msg("ERR count should be greater than or equal to -1"))?;
            if n < -1 {
                return Err(CmdError::msg(
                    "ERR count should be greater than or equal to -1",
                ));
            }
            n
        }
    };
    if args.len() > 3 {
        return Err(CmdError::WrongArity("slowlog|get".into()));
    }
    let log = ctx.srv.slowlog.lock();
    let n = if count == -1 {
        log.entries.len()
    } else {
        (count as usize).min(log.entries.len())
    };
    let out = &mut *ctx.out;
    out.array(n);
    for e in log.entries.iter().take(n) {
        out.array(6);
        out.int(e.id as i64);
        out.int(e.time_s);
        out.int(e.duration_us as i64);
        out.array(e.args.len());
        for a in &e.args {
            out.bulk(a);
        }
        out.bulk(e.peer.as_bytes());
        out.bulk(e.name.as_bytes());
    }
    Ok(())
}

pub(super) fn slowlog_len(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let n = ctx.srv.slowlog.lock().entries.len();
    ctx.out.int(n as i64);
    Ok(())
}

pub(super) fn slowlog_reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.srv.slowlog.lock().entries.clear();
    ctx.out.ok();
    Ok(())
}

pub(super) fn slowlog_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    )
}
