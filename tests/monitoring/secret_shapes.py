"""The corpus of secret shapes that redaction is held to (tests/monitoring/test_redaction.py, and end to
end through a real server in tests/scoreboard/server/test_provenance_secrets.py).

Each :class:`Shape` is a named way a secret reaches a run's record: a command line (``argv``) or a
``config=`` mapping (``config``), and the secret itself, which must appear nowhere afterwards. The
strings are made up, in each format's alphabet and length. :data:`KEPT` are look-alikes that are
not secrets and must survive; :data:`KNOWN_MISSES` are shapes tried and not redacted (docs/provenance.md
says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["KEPT", "KNOWN_MISSES", "SHAPES", "Shape"]

HEX40 = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"


@dataclass(frozen=True)
class Shape:
    name: str
    secret: str
    argv: list[str] = field(default_factory=list)
    config: dict[str, Any] | None = None


SHAPES: list[Shape] = [
    # the seven of issue 33, which all reached a public page before
    Shape("Hydra override", "hydraSecretV4lue", argv=["wandb.api_key=hydraSecretV4lue"]),
    Shape("shell VAR=value", "shellVarS3cret", argv=["MY_SERVICE_PASSWORD=shellVarS3cret"]),
    Shape("--passphrase X", "correct-horse-passphrase", argv=["--passphrase", "correct-horse-passphrase"]),
    Shape("-k X", "shortOptionK3y", argv=["-k", "shortOptionK3y"]),
    Shape("Authorization: Bearer header", "bearerT0kenValue.abc", argv=["-H", "Authorization: Bearer bearerT0kenValue.abc"]),
    Shape("?token= in a URL", "urlT0kenValue42", argv=["--data", "https://data.example.org/set?token=urlT0kenValue42&split=train"]),
    Shape("redis://:pw@host", "redisPassw0rd", argv=["--cache", "redis://:redisPassw0rd@cache.example.org:6379/0"]),
    # by name, on the command line
    Shape("--api-key X", "apiKeyValue123", argv=["--api-key", "apiKeyValue123"]),
    Shape("--password=X", "pw=with=equals", argv=["--password=pw=with=equals"]),
    Shape("--db-password X", "dbPassw0rdValue", argv=["--db-password", "dbPassw0rdValue"]),
    Shape("--wandb-key X (a 40-hex W&B key)", HEX40, argv=["--wandb-key", HEX40]),
    Shape("WANDB_API_KEY=40 hex", HEX40, argv=[f"WANDB_API_KEY={HEX40}"]),
    Shape("--token=X", "tokenEqualsValue", argv=["--token=tokenEqualsValue"]),
    Shape("Hydra +db.password with a space and &", "a b&c secret", argv=["+db.password=a b&c secret"]),
    Shape("PGPASSWORD=X", "pgPassValue99", argv=["PGPASSWORD=pgPassValue99"]),
    Shape("AWS_SECRET_ACCESS_KEY=X", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", argv=["AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]),
    Shape("X-Api-Key: header", "headerApiKey777", argv=["-H", "X-Api-Key: headerApiKey777"]),
    Shape("Authorization: Basic header", "dXNlcjpzM2NyM3Q=", argv=["--header=Authorization: Basic dXNlcjpzM2NyM3Q="]),
    Shape("Authorization: token header (GitHub style)", "plainTok3nValue", argv=["-H", "Authorization: token plainTok3nValue"]),
    Shape("JSON text with a password", "jsonPassw0rd", argv=['--opts={"user": "me", "password": "jsonPassw0rd"}']),
    # by shape, anywhere
    Shape("AWS access key id", "AKIAIOSFODNN7EXAMPLE", argv=["--profile-key-id", "AKIAIOSFODNN7EXAMPLE"]),
    Shape("GitHub classic token", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", argv=["ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]),
    Shape("GitHub fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", argv=["--gh=github_pat_11ABCDEFG0123456789_abcdefghijklmnop"]),
    Shape("GitLab token", "glpat-abcdefghij0123456789", argv=["glpat-abcdefghij0123456789"]),
    Shape("Hugging Face token", "hf_abcdefghijklmnopqrstuvwxyz012345", argv=["--hub", "hf_abcdefghijklmnopqrstuvwxyz012345"]),
    Shape("OpenAI project key", "sk-proj-abcdefghij0123456789ABCDEFGH", argv=["--llm", "sk-proj-abcdefghij0123456789ABCDEFGH"]),
    Shape("Anthropic key", "sk-ant-api03-abcdefghij0123456789", argv=["sk-ant-api03-abcdefghij0123456789"]),
    Shape("Stripe live key", "sk_live_abcdefghij0123456789", argv=["--stripe", "sk_live_abcdefghij0123456789"]),
    Shape("Slack bot token", "xoxb-1234567890-abcdefghijkl", argv=["xoxb-1234567890-abcdefghijkl"]),
    Shape("Slack webhook URL", "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", argv=["--notify", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"]),
    Shape("Google API key", "AIzaSyA1234567890abcdefghijklmnopqrstu", argv=["--maps", "AIzaSyA1234567890abcdefghijklmnopqrstu"]),
    Shape("npm token", "npm_abcdefghijklmnopqrstuvwxyz0123456789", argv=["npm_abcdefghijklmnopqrstuvwxyz0123456789"]),
    Shape("PyPI token", "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAw", argv=["--pypi", "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAw"]),
    Shape("JSON Web Token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", argv=["--jwt-file-contents", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]),
    Shape("palaestra API key", "pal_0123456789abcdefABCDEF", argv=["pal_0123456789abcdefABCDEF"]),
    Shape("postgres://user:pw@host", "pgUrlPassw0rd", argv=["--db", "postgresql://trainer:pgUrlPassw0rd@db.example.org/runs"]),
    Shape("https://x-access-token:TOKEN@github.com", "gitCloneT0ken", argv=["https://x-access-token:gitCloneT0ken@github.com/me/repo.git"]),
    Shape("presigned S3 URL", "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024", argv=["https://b.s3.amazonaws.com/k?X-Amz-Credential=AKID%2F20260101&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"]),
    Shape("Azure SAS signature", "sasSignatureValue%3D", argv=["https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=sasSignatureValue%3D"]),
    Shape("a long random word on its own", "Zx8Qw2Lp9Rt4Yu6Io1Pa3Sd5Fg7Hj0KlMn", argv=["--resume-from", "Zx8Qw2Lp9Rt4Yu6Io1Pa3Sd5Fg7Hj0KlMn"]),
    # in config=
    Shape("config: nested api_key", "nestedConfigKey1", config={"wandb": {"project": "p", "api_key": "nestedConfigKey1"}}),
    Shape("config: a numeric PIN named like a password", "48151623", config={"db_password": 48151623}),
    Shape("config: a list of tokens", "listTokenTwo", config={"hub_tokens": ["listTokenOne", "listTokenTwo"]}),
    Shape("config: a connection URL with a password", "mongoPassw0rd", config={"store": "mongodb+srv://u:mongoPassw0rd@c.example.org/db"}),
    Shape("config: a private key block", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", config={"service_account": {"type": "x", "pem": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}}),
    Shape("config: an OpenSSH private key under any name", "b3BlbnNzaC1rZXktdjEAAAAA", config={"deploy": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"}),
    Shape("config: camelCase authToken", "camelAuthT0ken", config={"authToken": "camelAuthT0ken"}),
    Shape("config: a bearer header string", "cfgBearerT0ken99", config={"headers": "Authorization: Bearer cfgBearerT0ken99"}),
]

#: Not secrets: each string must still be there after redaction.
KEPT: list[tuple[str, list[str]]] = [
    ("an env id", ["--env", "CartPole-v1"]),
    ("a learning rate", ["--lr=3e-4"]),
    ("a git commit", ["--resume-commit", "0123456789abcdef0123456789abcdef01234567"]),
    ("a UUID", ["--run-id", "123e4567-e89b-12d3-a456-426614174000"]),
    ("an LLM's max_tokens", ["max_tokens=256"]),
    ("a tokenizer", ["tokenizer=gpt2"]),
    ("a path", ["--monitor", "/home/me/runs/2026-01-01_12-00-00"]),
    ("a Hydra output dir", ["hydra.run.dir=outputs/cartpole"]),
    ("a URL without secrets", ["https://example.org/data?page=2&split=train"]),
    ("a word containing key", ["monkey=5", "--keyboard", "qwerty"]),
    ("a model name", ["--model", "meta-llama/Llama-3.1-8B-Instruct"]),
]

#: Tried and not redacted (docs/provenance.md lists them): too close to ordinary arguments to tell apart.
KNOWN_MISSES: list[Shape] = [
    Shape("a bare 40-hex W&B key with no name", HEX40, argv=["--resume", HEX40]),
    Shape("a password glued to a short option (mysql -pX)", "gluedPass", argv=["mysql", "-pgluedPass"]),
    Shape("sshpass -p X", "sshPassValue", argv=["sshpass", "-p", "sshPassValue"]),
]
