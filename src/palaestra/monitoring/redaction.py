"""Secrets taken out of what a run records and a board shows: by the name they are given and by the
shape of their value. One implementation, run by the Monitor when it writes a provenance file and by
the scoreboard again when it accepts one (``provenance_wire.Provenance``): a board never trusts the
uploader's redaction.

* :func:`redact_argv` -- a command line: the value of an option named like a secret (``--api-key X``,
  ``--passphrase=X``, ``-k X``), then every argument as text (:func:`redact_text`), and an argument
  that is a long random-looking word on its own.
* :func:`redact_text` -- any text: ``NAME=value`` and ``NAME: value`` with a secret-like name (shell
  variables, Hydra overrides such as ``wandb.api_key=X``, YAML and JSON), ``Authorization:`` headers
  and ``Bearer`` tokens, a URL's password (``redis://:pw@host``) and secret query parameters
  (``?token=``), private-key blocks, and the token formats in :data:`TOKEN_SHAPES`.
* :func:`redact_value` -- a JSON value (a config, an env's arguments): a mapping's entries with a
  secret-like key hidden whatever their value, strings by :func:`redact_text` and :func:`looks_random`.
* :func:`secret_name` -- whether a name (``WANDB_API_KEY``, ``db.password``, ``X-Amz-Signature``)
  names a secret.

Redaction errs towards hiding: ``sort_key=name`` loses its value too. A 40-hex-digit string on its
own is kept (it is as often a git commit as a W&B key): a W&B key is caught by its name
(``WANDB_API_KEY=``, ``wandb.api_key=``, ``--wandb-key``). docs/provenance.md lists what is covered.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "TOKEN_SHAPES",
    "looks_random",
    "redact_argv",
    "redact_text",
    "redact_value",
    "redact_word",
    "secret_entry",
    "secret_name",
]

REDACTED = "[REDACTED]"

#: Words that make a name secret wherever they stand in it (``db_password``, ``HF_TOKEN``, ``authToken``).
SECRET_WORDS = frozenset(
    {
        "token", "secret", "secrets", "password", "passwords", "passwd", "pwd", "pass", "pw",
        "passphrase", "credential", "credentials", "creds", "auth", "authorization", "apikey", "bearer",
        "cookie", "cookies", "session", "sessionid", "signature", "sig", "privatekey", "dsn",
    }
)  # fmt: skip
#: Parts of a word that make it secret (``PGPASSWORD``, ``HFTOKEN`` is caught as a word ending in "token";
#: ``max_tokens`` and ``tokenizer`` are not secrets).
SECRET_PARTS = ("password", "passwd", "passphrase", "secret", "credential", "apikey", "accesskey", "privatekey")
#: Words that make a name secret as its last word (``api_key``, ``AWS_ACCESS_KEY``, ``--key``); as a
#: first word they usually are not (``key_size``, ``keys_per_batch``).
SECRET_LAST_WORDS = frozenset({"key", "keys"})
#: Short options whose value is a secret (``-k X``: a key, in ssh-keygen, openssl, gpg...).
SECRET_SHORT_OPTIONS = frozenset({"-k"})

#: Token formats caught wherever they appear, each with its name (for docs/provenance.md and the tests).
TOKEN_SHAPES: dict[str, str] = {
    "palaestra API key": r"pal_[A-Za-z0-9_-]{8,}",
    "AWS access key id": r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
    "GitHub token": r"\bgh[pousr]_[A-Za-z0-9]{16,}",
    "GitHub fine-grained token": r"\bgithub_pat_[A-Za-z0-9_]{16,}",
    "GitLab token": r"\bglpat-[A-Za-z0-9_-]{16,}",
    "Hugging Face token": r"\bhf_[A-Za-z0-9]{8,}",
    "OpenAI / Anthropic / Stripe secret key": r"\b(?:sk|rk)[-_][A-Za-z0-9_-]{8,}",
    "Slack token": r"\bxox[abposre]-[A-Za-z0-9-]{8,}",
    "Slack webhook": r"hooks\.slack\.com/services/[A-Za-z0-9/]+",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{30,}",
    "npm token": r"\bnpm_[A-Za-z0-9]{30,}",
    "PyPI token": r"\bpypi-[A-Za-z0-9_-]{30,}",
    "SendGrid key": r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    "JSON Web Token": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "W&B local key": r"\blocal-[0-9a-f]{40}\b",
}
_TOKENS = re.compile("|".join(f"(?:{shape})" for shape in TOKEN_SHAPES.values()))
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)", re.S
)
#: ``Authorization: Bearer X``, ``Proxy-Authorization: Basic X``, ``Authorization=X``: the credentials.
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token|digest|negotiate)\s+)?[^\s\"',;]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}")
#: ``scheme://user:password@host`` and ``scheme://:password@host``: the password.
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^/\s@]+@")
#: ``?name=value`` and ``&name=value`` of a URL (a secret-named one is hidden).
_QUERY_PARAMETER = re.compile(r"([?&;]([^=&\s#;]+)=)([^&\s#;]+)")
#: ``NAME=value``, ``NAME: value``, ``"NAME": "value"``: the value, when the name is a secret's.
_ASSIGNMENT = re.compile(
    r"(?<![\w.+~/-])([A-Za-z_+~][\w.+~-]*)([\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|(?!//)[^\s\"',;&]+)"
)
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
#: A word that may be a random key: long, of a token's alphabet (hex alone is a commit or a digest).
_RANDOM_WORD = re.compile(r"^[A-Za-z0-9_\-+/=]{32,}$")


def secret_name(name: str) -> bool:
    """Whether ``name`` (an option, a variable, a config key, a query parameter) names a secret."""
    words = [w.lower() for w in _WORD_SPLIT.split(name.strip().lstrip("-+~")) if w]
    if not words:
        return False
    joined = "".join(words)
    return (
        any(w in SECRET_WORDS for w in words)
        or words[-1] in SECRET_LAST_WORDS
        or words[-1].endswith("token")
        or any(part in joined for part in SECRET_PARTS)
    )


def secret_entry(name: str, value: Any) -> bool:
    """Whether the entry ``name: value`` of a mapping is hidden: a secret's name, whatever the value
    holds (a PIN is a number), except a mapping (whose own keys say which of its entries are secret),
    a boolean or nothing; and ``tokens`` holding text (``hub_tokens: [...]``; ``max_tokens: 256`` is a count)."""
    if value is None or isinstance(value, (bool, Mapping)):
        return False
    if secret_name(name):
        return True
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    return bool(words) and words[-1] == "tokens" and isinstance(value, (str, list))


def looks_random(word: str) -> bool:
    """A word of 32 characters or more from a token's alphabet, with upper- and lower-case letters
    and digits, whose characters carry at least 4 bits each: a key or a token, not a name, a path,
    a hex digest or a UUID (those have one case of letters)."""
    if not _RANDOM_WORD.match(word) or word.count("/") > 1:
        return False
    if not (any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)):
        return False
    counts = Counter(word)
    entropy = -sum(n / len(word) * math.log2(n / len(word)) for n in counts.values())
    return entropy >= 4.0


def _assignment(match: re.Match[str]) -> str:
    name, between, value = match.group(1), match.group(2), match.group(3)
    if not secret_name(name) or value == REDACTED:
        return match.group(0)
    quote = value[0] if value[:1] in "\"'" else ""
    return f"{name}{between}{quote}{REDACTED}{quote}"


def _query_parameter(match: re.Match[str]) -> str:
    return f"{match.group(1)}{REDACTED}" if secret_name(match.group(2)) else match.group(0)


def _auth_header(match: re.Match[str]) -> str:
    scheme = f"{match.group(2)} " if match.group(2) else ""
    return f"{match.group(1)}{scheme}{REDACTED}"


def redact_text(text: str) -> str:
    """``text`` with every secret this module knows by name or by shape replaced by ``[REDACTED]``."""
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}@", text)
    text = _QUERY_PARAMETER.sub(_query_parameter, text)
    text = _ASSIGNMENT.sub(_assignment, text)
    return _TOKENS.sub(REDACTED, text)


def redact_word(text: str) -> str:
    """An argument or a string value: :func:`redact_text`, and a whole word (or a ``name=value``'s value) that :func:`looks_random`."""
    name, equals, value = text.partition("=")
    # one argument is one value: ``+db.password=a b&c`` hides all of it, not up to the first space
    if equals and (looks_random(value) or (secret_name(name) and " " not in name)):
        return f"{name}={REDACTED}"
    return REDACTED if looks_random(text) else redact_text(text)


def redact_argv(argv: Iterable[str]) -> list[str]:
    """The command line with secrets replaced: the value of an option named like a secret (in the
    same argument after ``=``, else the next argument), then each argument by :func:`redact_text`
    and :func:`looks_random`."""
    redacted: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            redacted.append(REDACTED)
            hide_next = False
            continue
        name, equals, _ = arg.partition("=")
        if arg.startswith("-") and (secret_name(name) or name in SECRET_SHORT_OPTIONS):
            if equals:
                redacted.append(f"{name}={REDACTED}")
            else:
                redacted.append(arg)
                hide_next = True
            continue
        redacted.append(redact_word(arg))
    return redacted


def redact_value(value: Any, depth: int = 0) -> Any:
    """A JSON value with its secrets replaced: the entries of mappings that :func:`secret_entry`
    hides; every string by :func:`redact_text`, or hidden whole when it :func:`looks_random`."""
    if isinstance(value, str):
        return redact_word(value)
    if depth > 64:
        return value
    if isinstance(value, Mapping):
        return {k: REDACTED if secret_entry(str(k), v) else redact_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, depth + 1) for v in value]
    return value
