"""What the benchmark scripts of this folder share."""
import os
import shlex
import subprocess
import sys


def link_model(trace):
    """fetch_bw and evict_bw (bytes/s) from a umadv-trace(5) file's link
    record: the link probe's measurements on the machine that recorded it."""
    with open(trace) as f:
        for line in f:
            if line.startswith("link "):
                fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                return float(fields["fetch_bw"]), float(fields["evict_bw"])
    sys.exit("bench: no link record in " + trace)


def bound_ms(compute_ms, fetched, evicted, link):
    """DESIGN.md's lower bound of an iteration under a budget, in ms:
    max(compute, bytes fetched / fetch bw, bytes evicted / evict bw), with
    @link = (fetch_bw, evict_bw) in bytes/s."""
    fetch_bw, evict_bw = link
    return max(compute_ms, fetched / fetch_bw * 1e3, evicted / evict_bw * 1e3)


def command_line(argv, env_set=None):
    """@argv as a shell would take it, after the variables of @env_set
    (a dict; None: no change), quoted, through env(1): a variable set to
    None is one the command runs without ("env -u A B=1 prog --x 'a b'")."""
    env_set = env_set or {}
    unset = ["-u " + name for name in sorted(env_set) if env_set[name] is None]
    assign = ["%s=%s" % (name, shlex.quote(env_set[name])) for name in sorted(env_set)
              if env_set[name] is not None]
    words = ["env"] + unset + assign if env_set else []
    return " ".join(words + [shlex.quote(a) for a in argv])


def run_command(argv, log, env_set=None, timeout=None):
    """Run @argv in this process's environment changed by @env_set (see
    command_line), its standard output and error kept apart: JSON on
    standard output must not meet a warning. @log gets the command line,
    then both streams. Returns (exit status, stdout, stderr, command line);
    the status is None when it ran past @timeout seconds."""
    env = dict(os.environ)
    for name, value in (env_set or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    line = command_line(argv, env_set)
    try:
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, _text(e.stdout), _text(e.stderr) + "\n(timed out)\n"
    except OSError as e:
        rc, out, err = 127, "", "%s: %s\n" % (argv[0], e.strerror)
    with open(log, "w") as f:
        f.write("$ %s\n%s" % (line, out))
        if err:
            f.write("--- standard error\n%s" % err)
    return rc, out, err, line


def _text(data):
    """A TimeoutExpired's partial output: bytes, str or None."""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""
