"""Offline stand-in for @rules_python//python:defs.bzl: the native Python rules of Bazel 4.2.3.

BUILD files load the py_* rules from here, as they would from rules_python, so they stay portable to
a Bazel with rules_python. See third_party/README.md.
"""

def py_binary(**attrs):
    native.py_binary(**attrs)

def py_library(**attrs):
    native.py_library(**attrs)

def py_test(**attrs):
    native.py_test(**attrs)

def py_runtime(**attrs):
    native.py_runtime(**attrs)
