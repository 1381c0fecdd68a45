"""The Maven repository this machine downloads from, as its own Maven would (issue 81): no registry's address is
written in this repository.

In order: the environment variable TUNELAB_MAVEN_REPOSITORY; the first mirror of Maven's central repository in
the user's settings (~/.m2/settings.xml), then in the machine's (Debian: /etc/maven/settings.xml), as Maven
picks one (`mirrorOf` naming central, `*` or `external:*`, not blocked, not `!central`); else the central
repository of the super POM that Debian's `maven` package ships (maven-model-builder's pom-4.0.0.xml, which
`./bazelw` installs). Prints the address on one line; exit 2 with what to do when none is found.

    python3 tools/maven/server_url.py [--explain]

Run by the repository rule tools/maven/maven_server.bzl (WORKSPACE) before any jar is fetched; every jar is
pinned by sha256 and served from Bazel's repository cache once fetched, so the address is needed only for a
jar the cache lacks. Standard library only: it runs before anything else is installed.
"""

import glob
import os
import sys
import xml.etree.ElementTree as ET
import zipfile

ENV = "TUNELAB_MAVEN_REPOSITORY"
GLOBAL_SETTINGS = ("/etc/maven/settings.xml", "/usr/share/maven/conf/settings.xml")
MODEL_BUILDER_JARS = ("/usr/share/maven/lib/maven-model-builder*.jar", "/usr/share/java/maven3-model-builder*.jar",
                      "/usr/share/java/maven-model-builder*.jar")
SUPER_POM = "org/apache/maven/model/pom-4.0.0.xml"
MAX_XML_BYTES = 1 << 20


def _children(element, name):
    return [c for c in element if c.tag.rsplit("}", 1)[-1] == name]


def _text(element, name):
    found = _children(element, name)
    return (found[0].text or "").strip() if found else ""


def _xml(data):
    if len(data) > MAX_XML_BYTES:
        raise ValueError(f"over {MAX_XML_BYTES} bytes")
    return ET.fromstring(data)


def mirrors_central(mirror_of):
    """Whether a <mirrorOf> value covers the central repository (Maven's rules, for the one id we use)."""
    tokens = [t.strip() for t in mirror_of.split(",") if t.strip()]
    if "!central" in tokens:
        return False
    return any(t in ("*", "central", "external:*", "external:https:*") for t in tokens)


def settings_mirror(path):
    """The URL of the first mirror of central in a settings.xml, or ''."""
    try:
        with open(path, "rb") as f:
            root = _xml(f.read(MAX_XML_BYTES + 1))
    except (OSError, ValueError, ET.ParseError):
        return ""
    for mirrors in _children(root, "mirrors"):
        for mirror in _children(mirrors, "mirror"):
            if _text(mirror, "blocked").lower() == "true":
                continue
            url = _text(mirror, "url")
            if url.startswith(("https://", "http://")) and mirrors_central(_text(mirror, "mirrorOf")):
                return url.rstrip("/")
    return ""


def super_pom_central(jar_patterns=MODEL_BUILDER_JARS):
    """The central repository's URL in the super POM of the machine's Maven, or ''."""
    for pattern in jar_patterns:
        for jar in sorted(glob.glob(pattern)):
            try:
                with zipfile.ZipFile(jar) as z:
                    root = _xml(z.read(SUPER_POM))
            except (OSError, KeyError, ValueError, zipfile.BadZipFile, ET.ParseError):
                continue
            for repositories in _children(root, "repositories"):
                for repo in _children(repositories, "repository"):
                    if _text(repo, "id") == "central" and _text(repo, "url").startswith("https://"):
                        return _text(repo, "url").rstrip("/")
    return ""


def find(environ=None, home=None, global_settings=GLOBAL_SETTINGS, jar_patterns=MODEL_BUILDER_JARS):
    """(url, where it came from), or ('', what was looked at)."""
    environ = os.environ if environ is None else environ
    home = home if home is not None else environ.get("HOME") or os.path.expanduser("~")
    given = environ.get(ENV, "").strip()
    if given:
        if not given.startswith(("https://", "http://")):
            return "", f"{ENV}={given[:80]!r} is not an http(s) URL"
        return given.rstrip("/"), f"${ENV}"
    for path in [os.path.join(home, ".m2", "settings.xml"), *global_settings]:
        url = settings_mirror(path)
        if url:
            return url, f"a mirror of central in {path}"
    url = super_pom_central(jar_patterns)
    if url:
        return url, "the central repository of this machine's Maven (its super POM)"
    return "", (f"no ${ENV}, no mirror of central in ~/.m2/settings.xml or {global_settings[0]}, and no Maven "
                "installed to ask (Debian: apt-get install maven; ./bazelw installs it)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    url, where = find()
    if not url:
        print(f"error: no Maven repository address: {where}", file=sys.stderr)
        return 2
    print(url)
    if "--explain" in argv:
        print(f"(from {where})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
