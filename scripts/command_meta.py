#!/usr/bin/env python3
"""Print CommandSpec declarations for commands, from a running redis-server's metadata.

COMMAND INFO and COMMAND DOCS of Tessera must equal redis-server 7.0's (except the `summary`
text, which Tessera words itself; tests/command_table.rs checks). This asks a reference
redis-server for that metadata and prints the declarations in the builder syntax of the
family tables (see crates/tessera/src/commands/meta.rs), to paste and then edit:

    redis-server --port 7777 --save '' --appendonly no &
    scripts/command_meta.py --port 7777 --group list --acl list lpush lrange 'object|freq'

The `cmd(...)` call assumes the family module's helper
`const fn cmd(name, arity, flags, since, summary, handler)` that sets the family's group and ACL
category (--group, --acl): the printed chain only adds what differs from those. The summary is
left as SUMMARY and the handler as the command's name; write both. Flags that COMMAND INFO does
not print (SENTINEL, MAY_REPLICATE, PROTECTED) must be added by hand where the server relies on
them. Needs only the Python standard library.
"""

import argparse
import json
import socket
import sys

WIDTH = 100

FLAGS = {
    "write": "WRITE", "readonly": "READONLY", "denyoom": "DENYOOM", "admin": "ADMIN",
    "pubsub": "PUBSUB", "noscript": "NOSCRIPT", "blocking": "BLOCKING", "loading": "LOADING",
    "stale": "STALE", "skip_monitor": "SKIP_MONITOR", "skip_slowlog": "SKIP_SLOWLOG",
    "asking": "ASKING", "fast": "FAST", "no_auth": "NO_AUTH",
    "no_mandatory_keys": "NO_MANDATORY_KEYS", "no_async_loading": "NO_ASYNC_LOADING",
    "no_multi": "NO_MULTI", "allow_busy": "ALLOW_BUSY",
    # `movablekeys` is derived from the key specs; not declared.
}
KS_FLAGS = {
    "RO": "RO", "RW": "RW", "OW": "OW", "RM": "RM", "access": "ACCESS", "update": "UPDATE",
    "insert": "INSERT", "delete": "DELETE", "not_key": "NOT_KEY", "incomplete": "INCOMPLETE",
    "variable_flags": "VARIABLE_FLAGS",
}
ACL_ORDER = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
             "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
             "dangerous", "connection", "transaction", "scripting"]
ARG_FN = {"string": "string", "integer": "integer", "double": "double", "pattern": "pattern",
          "unix-time": "unix_time"}


# ------------------------------------------------------------------ RESP3 client

class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rb")
        self.call("HELLO", "3")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        kind, rest = chr(line[0]), line[1:]
        if kind == "+":
            return rest.decode()
        if kind == "-":
            raise RuntimeError(rest.decode())
        if kind == ":":
            return int(rest)
        if kind == "$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if kind in "*~":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == "%":
            return {self.read(): self.read() for _ in range(int(rest))}
        if kind == "_":
            return None
        raise RuntimeError(f"unexpected reply {line!r}")


# ------------------------------------------------------------------ declarations

def rs(s):
    return json.dumps(s, ensure_ascii=False)


def implicit_acl(flags, cats):
    c = set()
    if "write" in flags:
        c.add("write")
    if "readonly" in flags and "scripting" not in cats:
        c.add("read")
    if "admin" in flags:
        c |= {"admin", "dangerous"}
    if "pubsub" in flags:
        c.add("pubsub")
    if "fast" in flags:
        c.add("fast")
    if "blocking" in flags:
        c.add("blocking")
    if "fast" not in c:
        c.add("slow")
    return c


def key_spec(k):
    flags = " | ".join(KS_FLAGS[f] for f in k["flags"]) or "0"
    bs, fk = k["begin_search"], k["find_keys"]
    if bs["type"] == "index" and fk["type"] == "range" and fk["spec"]["limit"] == 0:
        s = f'ks({flags}, {bs["spec"]["index"]}, {fk["spec"]["lastkey"]}, {fk["spec"]["keystep"]})'
    else:
        if bs["type"] == "index":
            b = f'BeginSearch::Index({bs["spec"]["index"]})'
        elif bs["type"] == "keyword":
            b = ("BeginSearch::Keyword { keyword: %s, startfrom: %d }"
                 % (rs(bs["spec"]["keyword"]), bs["spec"]["startfrom"]))
        else:
            b = "BeginSearch::Unknown"
        sp = fk.get("spec", {})
        if fk["type"] == "range":
            f = ("FindKeys::Range { lastkey: %d, keystep: %d, limit: %d }"
                 % (sp["lastkey"], sp["keystep"], sp["limit"]))
        elif fk["type"] == "keynum":
            f = ("FindKeys::Keynum { keynumidx: %d, firstkey: %d, keystep: %d }"
                 % (sp["keynumidx"], sp["firstkey"], sp["keystep"]))
        else:
            f = "FindKeys::Unknown"
        s = f"KeySpecDef::new({flags}, {b}, {f})"
    if "notes" in k:
        s += f'.notes({rs(k["notes"])})'
    return s


def arg(a):
    t, name = a["type"], rs(a["name"])
    if t == "key":
        s = f'a::key({name}, {a["key_spec_index"]})'
    elif t == "pure-token":
        s = f'a::pure({name}, {rs(a["token"])})'
    elif t in ("oneof", "block"):
        s = f"a::{t}({name}, &[" + ", ".join(arg(x) for x in a["arguments"]) + "])"
    else:
        s = f"a::{ARG_FN[t]}({name})"
    if "token" in a and t != "pure-token":
        s += f'.token({rs(a["token"])})'
    if "since" in a:
        s += f'.since({rs(a["since"])})'
    if "deprecated_since" in a:
        s += f'.deprecated({rs(a["deprecated_since"])})'
    for f in a.get("flags", []):
        s += {"optional": ".optional()", "multiple": ".multiple()",
              "multiple_token": ".multiple_token()"}[f]
    return s


def declaration(info, doc, group, acl):
    name, arity, flags = info[0], info[1], info[2]
    cats = [c[1:] for c in info[6]]
    explicit = [c for c in ACL_ORDER if c in cats and c not in implicit_acl(flags, cats)]
    short = name.split("|")[-1]
    fl = " | ".join(FLAGS[f] for f in flags if f in FLAGS) or "0"
    handler = name.replace("|", "_").replace("-", "_")
    s = f'cmd({rs(short)}, {arity}, {fl}, {rs(doc["since"])}, "SUMMARY", {handler})'
    if explicit != ([acl] if acl else []):
        s += ".acl(" + (" | ".join("acl::" + c.upper() for c in explicit) or "0") + ")"
    if doc["group"] != group:
        s += f'.group({rs(doc["group"])})'
    if doc.get("complexity", "") != "O(1)":
        s += f'.complexity({rs(doc.get("complexity", ""))})'
    if info[8]:
        s += ".key_specs(&[" + ", ".join(key_spec(k) for k in info[8]) + "])"
    if info[7]:
        s += ".tips(&[" + ", ".join(rs(t) for t in info[7]) + "])"
    doc_flags = list(doc.get("doc_flags", []))
    if "deprecated_since" in doc:
        s += f'.deprecated({rs(doc["deprecated_since"])}, {rs(doc["replaced_by"])})'
        doc_flags = [f for f in doc_flags if f != "deprecated"]
    if doc_flags:
        s += ".doc_flags(" + " | ".join("docflags::" + f.upper() for f in doc_flags) + ")"
    if "history" in doc:
        s += ".history(&[" + ", ".join(f"({rs(v)}, {rs(t)})" for v, t in doc["history"]) + "])"
    if "arguments" in doc:
        s += ".args(&[" + ", ".join(arg(x) for x in doc["arguments"]) + "])"
    if info[9]:
        s += f".subcommands({short.upper().replace('-', '_')}_SUBS)"
    return s


# ------------------------------------------------------------------ layout

def close(s, i):
    """Index of the bracket closing the one at s[i]."""
    depth, j = 0, i
    while True:
        ch = s[j]
        if ch == '"':
            j += 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return j
        j += 1


def split_top(s):
    parts, start, j = [], 0, 0
    while j < len(s):
        ch = s[j]
        if ch == '"':
            j += 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
        elif ch in "([{":
            j = close(s, j)
        elif ch == ",":
            parts.append(s[start:j].strip())
            start = j + 1
        j += 1
    if s[start:].strip():
        parts.append(s[start:].strip())
    return parts


def chain(s):
    """`f(..).m(..)` split into ['f(..)', '.m(..)']."""
    segs, start, j = [], 0, 0
    while j < len(s):
        ch = s[j]
        if ch == '"':
            j += 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
        elif ch in "([{":
            j = close(s, j)
        elif ch == "." and j > start:
            segs.append(s[start:j])
            start = j
        j += 1
    segs.append(s[start:])
    return segs


def lay_list(items, ind):
    pad = " " * (ind + 4)
    return "".join(pad + lay(it, ind + 4, ",") + "\n" for it in items)


def lay_call(seg, ind, trail):
    if ind + len(seg) + len(trail) <= WIDTH or seg.startswith('"') or not seg.endswith(")"):
        return seg + trail
    p = seg.index("(")
    head, inner = seg[: p + 1], seg[p + 1 : -1]
    if inner.startswith("&[") and close(inner, 1) == len(inner) - 1:
        return head + "&[\n" + lay_list(split_top(inner[2:-1]), ind) + " " * ind + "])" + trail
    return head + "\n" + lay_list(split_top(inner), ind) + " " * ind + ")" + trail


def lay(e, ind, trail=""):
    """Lays an expression out within WIDTH columns, rustfmt-like."""
    if ind + len(e) + len(trail) <= WIDTH:
        return e + trail
    if e.startswith("&[") and close(e, 1) == len(e) - 1:
        return "&[\n" + lay_list(split_top(e[2:-1]), ind) + " " * ind + "]" + trail
    segs = chain(e)
    if len(segs) == 1:
        return lay_call(e, ind, trail)
    out = lay_call(segs[0], ind, "")
    ci = ind if "\n" in out else ind + 4
    for k, s in enumerate(segs[1:]):
        out += "\n" + " " * ci + lay_call(s, ci, trail if k == len(segs) - 2 else "")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=6379, help="redis-server port (default 6379)")
    p.add_argument("--group", default="", help="the family helper's group, e.g. list")
    p.add_argument("--acl", default="", help="the family helper's ACL category, e.g. list")
    p.add_argument("names", nargs="+", help="command names; `container|sub` for subcommands")
    a = p.parse_args()
    r = Redis(a.port)
    for name in a.names:
        info = r.call("COMMAND", "INFO", name)[0]
        docs = r.call("COMMAND", "DOCS", name)
        if info is None or not docs:
            sys.exit(f"redis-server does not know {name!r}")
        print("    " + lay(declaration(info, docs[name], a.group, a.acl), 4, ","))


if __name__ == "__main__":
    main()
