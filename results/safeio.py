"""The one way tunelab writes a file and the one way it reads untrusted input (issue 58).

Writing: a file is written only into a folder whose every ancestor, and every link on the way to it, is owned
by root or by this user and is writable by others only when sticky (as /tmp): otherwise another local user
could swap a folder for a link to /etc between the check and the write. A file is created new (O_EXCL, never
through a link) and renamed over its name, which may hold only a regular file or nothing: a link, folder, FIFO
or device there is refused (as root, `--run-info /dev/null` once replaced /dev/null). Logs a process appends
to are opened without following a link and without blocking on a FIFO. `//:lint_test` refuses open(..., "w"),
os.replace/rename, shutil.copy*/move and Path.write_* anywhere else.

Reading: every file or host answer tunelab did not write in this process (results, manifests, sensitivity
figures, studies, references, fleet plans and run states, resume archives, recorded distributions) is read by
`read_json`/`read_toml` or parsed by `parse_json`/`parse_toml`: a regular file only (a FIFO or /dev/zero is
refused before a byte is read), a size cap, strict JSON (no NaN), integers of at most MAX_INT_DIGITS digits
and at most MAX_INTEGER, nesting of at most MAX_DEPTH levels (walked without recursion), then a JSON schema of
types. Anything else raises InputError, the one error every caller turns into a message naming the file.
`//:lint_test` refuses json.load(s)/tomllib.load(s) anywhere else.
"""

import contextlib
import fcntl
import hashlib
import json
import math
import os
import stat
import tempfile
import tomllib

MAX_DEPTH = 64  # far deeper than any document tunelab writes; deeper ones exhaust recursion in readers
# The largest integer a document may hold: far above any count, byte size or nanosecond total tunelab writes
# (2**63, a signed 64-bit counter), far below what a float can hold exactly enough to compare.
MAX_INTEGER = 2**63
# Python refuses integers over 4,300 digits with a ValueError of its own that the fleet's readers did not catch
# (issue 58, row 7: a 5,000-digit integer in a host's plan).
MAX_INT_DIGITS = 1000
DEFAULT_MAX_BYTES = 16 << 20
MAX_LINKS = 40  # as the kernel's own limit on links followed in one path


class InputError(ValueError):
    """Untrusted input refused: too large, not a regular file, not JSON/TOML, too deep, or not of the schema."""


class WriteRefused(OSError):
    """A write refused: the folder could be swapped by another user, or the name holds something other than a
    regular file."""


# ---- writing ---------------------------------------------------------------------------------------------

def _check_component(path, st, target):
    me = os.geteuid()
    if st.st_uid not in (0, me):
        raise WriteRefused(f"{path} (on the way to {target}) is owned by uid {st.st_uid}, not root or this user "
                           f"({me}): another user could swap what is written; write somewhere root or you own")
    if (stat.S_ISDIR(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and not st.st_mode & stat.S_ISVTX):
        raise WriteRefused(f"{path} (on the way to {target}) is writable by other users (mode "
                           f"{stat.S_IMODE(st.st_mode):04o}) and not sticky: another user could swap what is written")


def check_folder(folder, create=False):
    """The real path of `folder` after walking every component from / (each link too, by its own owner, and
    what it points at): owned by root or this user, writable by others only when sticky. Missing components
    are created (mode 0755) when `create`. Raises WriteRefused."""
    target = os.path.abspath(folder)
    pending = [p for p in target.split("/") if p]
    real = "/"
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            real = os.path.dirname(real)
            continue
        path = os.path.join(real, part)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not create:
                raise WriteRefused(f"{path} (on the way to {target}) does not exist") from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o755)
            st = os.lstat(path)
        _check_component(path, st, target)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise WriteRefused(f"{target}: more than {MAX_LINKS} links on the way")
            pointed = os.readlink(path)
            pending = [p for p in pointed.split("/") if p] + pending
            if pointed.startswith("/"):
                real = "/"
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise WriteRefused(f"{path} (on the way to {target}) is not a folder")
        real = path
    return real


def path_component(name, what="a name"):
    """`name` if it can be one component of a path tunelab makes (a file or folder name taken from a record, a
    set, a host or a user): a non-empty string of at most 255 bytes with no separator, no NUL or other control
    character, and not "." or "..". Raises InputError naming `what`. The one check for every such name."""
    if (not isinstance(name, str) or not name or name in (".", "..") or len(name.encode("utf-8", "replace")) > 255
            or any(c in name for c in "/\\") or any(ord(c) < 32 or ord(c) == 127 for c in name)):
        raise InputError(f"{what} {str(name)[:80]!r}: not a single file name (no separator, '..', control "
                         "character or empty name)")
    return name


def inside(folder, *names, what="a name"):
    """folder/NAME/... made from `names`, each through path_component, with no link among the components
    below `folder` that already exist (a stored folder may have been given links that point out of it).
    Raises InputError."""
    path = folder
    for name in names:
        path = os.path.join(path, path_component(name, what))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise InputError(f"{path} is a link: a stored folder's paths are never followed out of it")
    return path


SECRET_QUERY_KEYS = ("p", "password", "pass", "token", "secret", "key", "apikey", "api_key")


def redact_url(url):
    """`url` as it may be printed, logged or stored: a password in it (user:PASSWORD@host, or a query value
    named as one, as InfluxDB 1.x's p=) shown as ***. Anything that is not a URL is shown whole only when it
    has no '@'."""
    import urllib.parse
    text = str(url)
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return "<a URL that does not parse>" if "@" in text else text
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else f"{user}@{host}"
    query = "&".join(
        f"{k}=***" if k.lower() in SECRET_QUERY_KEYS else item
        for item in parts.query.split("&") if item for k in [item.split("=", 1)[0]]) if parts.query else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def http_url_problem(url):
    """Why `url` is not an http(s) URL with a host and a path ('/...'), or '' (user:password@ allowed: the
    caller sends it as authentication, never as part of the host)."""
    import urllib.parse
    try:
        parts = urllib.parse.urlsplit(url or "")
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname or not parts.path.startswith("/"):
        return "not an http(s) URL with a host and a path"
    if any(c.isspace() or ord(c) < 32 for c in url):
        return "a URL holds no white space or control character"
    return ""


def _refuse_non_regular(path):
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise WriteRefused(f"{path}: not a regular file (a link, folder, FIFO or device): refusing to replace it")


@contextlib.contextmanager
def atomic_file(path, binary=False, mode=0o644):
    """A new file object on a temporary file beside `path`, renamed over `path` (a regular file or nothing)
    when the block ends without an exception, fsynced: readers see all of it or none."""
    folder = check_folder(os.path.dirname(os.path.abspath(path)), create=True)
    final = os.path.join(folder, os.path.basename(path))
    _refuse_non_regular(final)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        _refuse_non_regular(final)
        os.replace(tmp, final)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path, data, mode=0o644):
    with atomic_file(path, binary=True, mode=mode) as f:
        f.write(data)


def write_text(path, text, mode=0o644):
    with atomic_file(path, mode=mode) as f:
        f.write(text)


def write_json(path, doc, mode=0o644, indent=1):
    """Strict JSON (a NaN or infinity is refused, never written), a final newline, atomically."""
    text = json.dumps(doc, indent=indent, allow_nan=False) + "\n"
    write_text(path, text, mode=mode)


def create_new(path, data, mode=0o644):
    """Writes `data` to `path`, which must not exist (O_EXCL: never replaces, never follows a link)."""
    folder = check_folder(os.path.dirname(os.path.abspath(path)), create=True)
    final = os.path.join(folder, os.path.basename(path))
    fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(final, mode)


def open_log(path, append=False, binary=False):
    """A file object to write a log to (a child's stdout, a console): a regular file or nothing at `path`,
    never a link; a FIFO is refused without blocking on it."""
    folder = check_folder(os.path.dirname(os.path.abspath(path)), create=True)
    final = os.path.join(folder, os.path.basename(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_APPEND if append else 0
    try:
        fd = os.open(final, flags, 0o644)
    except OSError as e:
        raise WriteRefused(f"{final}: cannot be opened as a log without following a link or blocking ({e})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteRefused(f"{final}: not a regular file (a FIFO or device): refusing to write a log there")
    if not append:
        os.ftruncate(fd, 0)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, ("ab" if append else "wb") if binary else ("a" if append else "w"))


def copy_file(source, path, mode=None):
    """Copies a regular file's bytes to `path` atomically; the mode is the source's unless given."""
    with open(source, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise WriteRefused(f"{source}: not a regular file: not copied")
        with atomic_file(path, binary=True, mode=stat.S_IMODE(st.st_mode) if mode is None else mode) as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)


def new_folder(parent, prefix):
    """A new private folder (mode 0700, mkdtemp) in the checked folder `parent`."""
    return tempfile.mkdtemp(prefix=prefix, dir=check_folder(parent, create=True))


def move_into_place(source, path, replace=False):
    """Renames `source` (a file or a staged folder) to `path`, both in checked folders; an existing folder at
    `path` only with `replace` (a link there never)."""
    check_folder(os.path.dirname(os.path.abspath(source)))
    folder = check_folder(os.path.dirname(os.path.abspath(path)), create=True)
    final = os.path.join(folder, os.path.basename(path))
    if os.path.islink(final):
        raise WriteRefused(f"{final} is a link: refusing to replace it")
    if replace:
        os.replace(source, final)
    else:
        os.rename(source, final)  # a folder over an existing non-empty one fails: nothing is mixed


def write_setting(path, value):
    """Writes a kernel setting (a file under /proc/sys or /sys) that exists: never created, never through a
    final link, never a FIFO (opened without blocking)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # as `echo v >`
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteRefused(f"{path}: not a kernel setting (a FIFO, device or folder): not written")
    with os.fdopen(fd, "w") as f:
        f.write(value)


def open_lock(path):
    """A file descriptor (read-write) of a lock file in a checked folder, created 0600 if absent, never
    through a link, only a regular file."""
    folder = check_folder(os.path.dirname(os.path.abspath(path)))
    fd = os.open(os.path.join(folder, os.path.basename(path)),
                 os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteRefused(f"{path}: not a regular file: not used as a lock")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


# ---- reading ---------------------------------------------------------------------------------------------

def read_bytes(path, max_bytes=DEFAULT_MAX_BYTES):
    """The bytes of a regular file of at most `max_bytes` (a FIFO, device or folder is refused before a byte
    is read). Raises InputError; a missing file raises FileNotFoundError (callers say what was expected)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror or e})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{path}: not a regular file (a FIFO, device or folder): not read")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > max_bytes:
            raise InputError(f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit for this file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{path}: over the {max_bytes}-byte limit for this file")
    return data


def sha256_of(path):
    """Hex sha256 of a regular file, read in 1 MiB blocks (any size: a digest keeps none of them); a link is
    followed (/proc/PID/exe is one), a FIFO, device or folder refused before a byte is read (InputError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{path}: not a regular file (a FIFO, device or folder): not read")
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class _NonFinite(ValueError):
    pass


def _bounded_int(text):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _refuse_constant(name):
    """Python's json reads NaN, Infinity and -Infinity, which JSON does not allow: a value a rig could not
    measure must never be averaged into a table as if it were a number."""
    raise _NonFinite(name)


def check_shape(doc, max_depth=MAX_DEPTH):
    """Raises InputError for a document nested deeper than max_depth or holding a NaN or infinite number or an
    integer beyond MAX_INTEGER (walked without recursion, so a hostile document cannot exhaust the stack)."""
    stack = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > max_depth:
            raise InputError(f"nested deeper than {max_depth} levels at {'/'.join(map(str, path[:8]))}/...")
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"holds a value that is not a finite number at {'/'.join(map(str, path)) or '(top)'}")
        # A JSON integer beyond a float's range passes as "finite" but breaks every reader that computes with it
        # (issue 39: a 400-digit sample crashed the site build with OverflowError).
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            raise InputError(f"holds an integer beyond {MAX_INTEGER:.0e} at {'/'.join(map(str, path)) or '(top)'}")
        if isinstance(value, dict):
            stack.extend((child, path + (key,)) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, path + (i,)) for i, child in enumerate(value))


def _validator():
    """jsonschema's Draft 2020-12 validator, with `pattern`'s `$` meaning the end of the string as in ECMA-262
    (Python's `$` also matches before a final newline, so a run id with a newline after it passed: issue 39).
    Imported here: the lock tools run this module with no third-party package installed."""
    if "validator" not in _SCHEMA_CACHE:
        import jsonschema
        pattern = jsonschema.Draft202012Validator.VALIDATORS["pattern"]

        def whole_pattern(validator, regex, instance, schema_doc):
            yield from pattern(validator, regex, instance, schema_doc)
            if isinstance(instance, str) and regex.endswith("$") and instance.endswith("\n"):
                yield jsonschema.ValidationError(f"{instance[:80]!r} ends in a newline, which {regex!r} does not allow")
        _SCHEMA_CACHE["validator"] = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                                                  {"pattern": whole_pattern})
    return _SCHEMA_CACHE["validator"]


_SCHEMA_CACHE: dict = {}


def schema_path(name):
    # In the source tree and in runfiles alike, the schemas sit in results/schema beside this file.
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema", f"{name}.schema.json")


def load_schema(name):
    """A schema of results/schema by name (e.g. run_manifest.v1), read once (files of this checkout)."""
    if name not in _SCHEMA_CACHE:
        _SCHEMA_CACHE[name] = json.loads(read_bytes(schema_path(name), 1 << 20))
    return _SCHEMA_CACHE[name]


def schema_problem(schema_doc, doc):
    """"<path>: <message>" of the first violation of a JSON schema (by path), or ''."""
    if isinstance(schema_doc, str):
        schema_doc = load_schema(schema_doc)
    errors = sorted(_validator()(schema_doc).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return ""
    message = errors[0].message  # it quotes the value: a long one keeps its head and the verdict at its end
    message = message if len(message) <= 300 else f"{message[:160]} ... {message[-120:]}"
    return f"{'/'.join(str(p) for p in errors[0].absolute_path) or '(top)'}: {message}"


def _checked(doc, schema):
    check_shape(doc)
    if schema is not None:
        problem = schema_problem(schema, doc)
        if problem:
            raise InputError(f"does not fit {schema if isinstance(schema, str) else 'its schema'} at {problem}")
    return doc


def parse_json(data, max_bytes=DEFAULT_MAX_BYTES, schema=None):
    """A JSON document from untrusted bytes or text: size limit, strict JSON (no NaN/Infinity), bounded
    integers and depth, then `schema` (a results/schema name or a schema) if given. Raises InputError."""
    if len(data) > max_bytes:
        raise InputError(f"{len(data)} bytes or more, over the {max_bytes}-byte limit")
    try:
        doc = json.loads(data, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except _NonFinite as e:
        raise InputError(f"holds {e.args[0]}, not a number: a corrupt measurement") from None
    except RecursionError:
        raise InputError(f"nested too deeply (over {MAX_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, and an integer over MAX_INT_DIGITS
        raise InputError(f"not valid JSON ({str(e)[:200]})") from None
    return _checked(doc, schema)


def json_stream(text, separators=" \t\r\n"):
    """(value, end) of each JSON value in a stream of concatenated ones (an SLS or Rumen trace, a metrics
    sink's array body), skipping `separators` between them, each bounded as parse_json's. InputError at the
    first character that starts no value (a caller reading a truncated stream keeps what came before)."""
    decoder = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_bounded_int)
    pos = 0
    while True:
        while pos < len(text) and text[pos] in separators:
            pos += 1
        if pos >= len(text):
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except _NonFinite as e:
            raise InputError(f"holds {e.args[0]}, not a number") from None
        except RecursionError:
            raise InputError(f"nested too deeply (over {MAX_DEPTH} levels)") from None
        except ValueError as e:  # JSONDecodeError, and an integer over MAX_INT_DIGITS
            raise InputError(f"not a stream of JSON values ({str(e)[:200]})") from None
        check_shape(value)
        yield value, pos


def parse_toml(text, max_bytes=1 << 20, schema=None):
    """A TOML document from untrusted text (bytes are decoded as UTF-8): as parse_json."""
    if len(text) > max_bytes:
        raise InputError(f"{len(text)} bytes or more, over the {max_bytes}-byte limit")
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        doc = tomllib.loads(text)
    except RecursionError:
        raise InputError(f"nested too deeply (over {MAX_DEPTH} levels)") from None
    except (tomllib.TOMLDecodeError, ValueError) as e:  # ValueError: an integer of over 4,300 digits, bad UTF-8
        raise InputError(f"not valid TOML ({str(e)[:200]})") from None
    return _checked(doc, schema)


def read_json(path, max_bytes=DEFAULT_MAX_BYTES, schema=None):
    """parse_json of a file's bytes (read_bytes); the error names the file."""
    try:
        return parse_json(read_bytes(path, max_bytes), max_bytes, schema)
    except InputError as e:
        raise InputError(e.args[0] if str(e).startswith(str(path)) else f"{path}: {e}") from None


def read_toml(path, max_bytes=1 << 20, schema=None):
    """parse_toml of a file's bytes (read_bytes); the error names the file."""
    try:
        return parse_toml(read_bytes(path, max_bytes), max_bytes, schema)
    except InputError as e:
        raise InputError(e.args[0] if str(e).startswith(str(path)) else f"{path}: {e}") from None


def read_text(path, max_bytes=DEFAULT_MAX_BYTES):
    """A regular file's text (UTF-8, undecodable bytes replaced), bounded as read_bytes."""
    return read_bytes(path, max_bytes).decode("utf-8", errors="replace")
