"""The secret screen's two corpora, generated with a seeded generator (the same strings every run).

* :func:`ordinary`: strings of the kinds users type that hold no secret (model ids, file paths, commit
  hashes, UUIDs, image tags, URLs, package pins, base64-looking identifiers, numbers, prose that talks about
  passwords and tokens); the screen must leave every one of them whole.
* :func:`secret_cases`: secrets of many kinds, each in a sentence; the screen must cut out every one.

No key-shaped literal is written in this file: every key is assembled at run time from a prefix split in two
and a random body, so a secret scanner reading the repository finds nothing.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
URLSAFE = B62 + "-_"
B64 = B62 + "+/"
HEX = "0123456789abcdef"


def body(r: random.Random, n: int, alphabet: str = B62) -> str:
    """``n`` random characters of ``alphabet`` holding a digit, a lower- and an upper-case letter when the
    alphabet has them (what a generated key holds)."""
    classes = [c for c in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
               if any(ch in c for ch in alphabet)]
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        if n < len(classes) or all(any(ch in c for ch in s) for c in classes):
            return s


# -- ordinary strings ---------------------------------------------------------------------------------

ORGS = ["BAAI", "Alibaba-NLP", "sentence-transformers", "meta-llama", "mistralai", "Qwen", "google",
        "microsoft", "intfloat", "nomic-ai", "thenlper", "jinaai", "mixedbread-ai", "TheBloke", "HuggingFaceH4",
        "deepseek-ai", "NousResearch", "tiiuae", "EleutherAI", "bigscience", "stabilityai", "facebook",
        "allenai", "cross-encoder", "Snowflake", "nvidia", "ibm-granite", "apple", "CohereForAI", "openai"]
FAMILIES = ["bge", "gte", "e5", "Llama", "llama", "Mistral", "Mixtral", "Qwen2.5", "gemma", "Phi", "MiniLM",
            "all-MiniLM", "mpnet", "roberta", "bert", "flan-t5", "deberta-v3", "distilbert", "nomic-embed-text",
            "jina-embeddings", "mxbai-embed", "snowflake-arctic-embed", "stella", "granite", "OpenELM", "falcon",
            "bloom", "pythia", "stablelm", "deepseek-coder", "multilingual-e5", "gte-Qwen2", "ms-marco-MiniLM",
            "Meta-Llama-3.1", "CodeLlama", "Nous-Hermes-2", "zephyr", "whisper", "clip-vit", "xlm-roberta"]
SIZES = ["small", "base", "large", "xl", "7B", "8B", "13B", "70B", "1.5B", "0.5B", "8x7B", "3B", "335M",
         "L6", "L12", "mini", "medium", "1.1B", "405B", "2b", "9b", "27b", "22M", "110M"]
SUFFIXES = ["Instruct", "Chat", "hf", "GGUF", "AWQ", "GPTQ", "en", "v1.5", "v2", "v0.1", "v1", "it", "4bit",
            "int8", "fp16", "v0.3", "instruct-v0.2", "Q4_K_M", "chat-hf", "en-v1.5", "base-v2", "v2-moe",
            "Instruct-v0.1", "Instruct-Turbo", "onnx", "mlx", "exl2-4.0bpw"]


def model_id(r: random.Random) -> str:
    parts = [r.choice(FAMILIES)] + r.sample(SIZES, r.randint(0, 1)) + r.sample(SUFFIXES, r.randint(1, 2))
    name = "-".join(parts)
    return name if r.random() < 0.1 else f"{r.choice(ORGS)}/{name}"


NAMES = ["JaneDoe", "jdoe", "Alex", "mkowalski", "LiWei", "SaraK", "dev", "runner", "Administrator", "ubuntu"]
DIRS = ["projects", "Projects", "src", "lib", "node_modules", "Library", "Application Support", "Caches",
        "Documents", "Downloads", "workspace", "repos", "plur", "tests", "components", "pkg", "internal",
        "site-packages", "python3.11", "Code", "User", "dist", "build", "assets", "models--BAAI--bge-small-en-v1.5",
        "snapshots", "AppData", "Local", "Temp", "go", "bin", "cmd", "api", "v2", "config", "ProgramData"]
FILES = ["settings.json", "UserProfileCard2.tsx", "test_screen.py", "README.md", "main.go", "Cargo.toml",
         "docker-compose.yml", "AppDelegate.swift", "index.d.ts", "model.safetensors", "config.json",
         "tokenizer_config.json", "pytorch_model.bin", "HttpClientHandler3.cs", "build.gradle.kts",
         "Dockerfile", "IMG_20240105_142233.jpg", "Screenshot 2024-01-05 at 14.22.33.png", "notes-2024-Q3.md",
         "WebViewController2.m", "schema.v2.graphql", "requirements-dev.txt", "pyproject.toml", ".env.example"]


def file_path(r: random.Random) -> str:
    segs = [r.choice(DIRS) for _ in range(r.randint(1, 5))] + [r.choice(FILES)]
    style = r.randrange(4)
    if style == 0:
        return "/Users/" + r.choice(NAMES) + "/" + "/".join(segs)
    if style == 1:
        return "C:\\Users\\" + r.choice(NAMES) + "\\" + "\\".join(segs)
    if style == 2:
        return "~/" + "/".join(segs)
    return "/".join(segs)


def commit(r: random.Random) -> str:
    full = "".join(r.choice(HEX) for _ in range(40))
    return r.choice([full, full[:7], full[:12], f"git show {full[:9]}", f"{full[:7]}..{full[20:27]}",
                     f"commit {full}", f"sha256:{hashlib.sha256(full.encode()).hexdigest()}"])


def a_uuid(r: random.Random) -> str:
    u = str(uuid.UUID(int=r.getrandbits(128), version=r.choice([1, 4])))
    return r.choice([u, u.upper(), "{" + u + "}", u.replace("-", "")])


REGISTRIES = ["", "docker.io/", "ghcr.io/", "quay.io/", "public.ecr.aws/", "123456789012.dkr.ecr.eu-west-1.amazonaws.com/",
              "registry.gitlab.com/", "nvcr.io/", "mcr.microsoft.com/", "gcr.io/"]
IMAGES = ["library/python", "nginx", "postgres", "pgvector/pgvector", "redis", "node", "nvidia/cuda", "pytorch/pytorch",
          "myorg/api-server", "acme/WebFrontend", "huggingface/text-generation-inference", "dotnet/sdk",
          "grafana/grafana", "bitnami/kafka", "vllm/vllm-openai", "ollama/ollama", "ubuntu", "alpine"]
TAGS = ["latest", "3.11-slim-bookworm", "1.25-alpine", "16.2", "pg16", "v0.5.1", "12.1.0-cudnn8-devel-ubuntu22.04",
        "2.3.1-cuda12.1-cudnn8-runtime", "20-bookworm-slim", "8.0-jammy", "v1.2.3-rc.1", "nightly-2024-01-05",
        "sha-1a2b3c4", "main-20240105.3", "3.1.2-alpine3.19", "22.04", "0.4.2-gpu"]


def image_tag(r: random.Random) -> str:
    ref = r.choice(REGISTRIES) + r.choice(IMAGES)
    if r.random() < 0.2:
        return f"{ref}@sha256:{hashlib.sha256(str(r.random()).encode()).hexdigest()}"
    return f"{ref}:{r.choice(TAGS)}"


def url(r: random.Random) -> str:
    yt = body(r, 11, URLSAFE)
    drive = body(r, 33, URLSAFE)
    h = "".join(r.choice(HEX) for _ in range(40))
    return r.choice([
        f"https://huggingface.co/{model_id(r).split('/')[-1] if r.random() < 0.3 else model_id(r)}",
        f"https://github.com/{r.choice(ORGS)}/plur/blob/{h}/plur/screen/text.py#L{r.randint(1, 400)}",
        f"https://github.com/{r.choice(ORGS)}/FlagEmbedding/pull/{r.randint(1, 9999)}/files",
        f"https://www.youtube.com/watch?v={yt}", f"https://youtu.be/{yt}?t={r.randint(1, 900)}",
        f"https://docs.google.com/document/d/{drive}/edit?usp=sharing",
        f"https://drive.google.com/file/d/{drive}/view",
        f"https://arxiv.org/abs/{r.randint(2001, 2412)}.{r.randint(10000, 99999)}v{r.randint(1, 3)}",
        f"https://en.wikipedia.org/wiki/Luhn_algorithm#{r.choice(['Description', 'Example'])}",
        f"https://stackoverflow.com/questions/{r.randint(10**6, 8 * 10**7)}/how-to-parse-yaml-in-python",
        f"https://example.com/Search?q=SpringBoot3&page={r.randint(1, 50)}&utm_source=newsletter",
        f"https://my-bucket-2024.s3.eu-west-1.amazonaws.com/Reports/Q3/Summary-{r.randint(1, 99)}.pdf",
        f"https://pypi.org/project/sentence-transformers/{r.randint(2, 3)}.{r.randint(0, 9)}.{r.randint(0, 9)}/",
        f"http://localhost:{r.randint(1024, 65535)}/api/v1/recall?agent=claude-code&k=12",
        f"https://medium.com/@JaneDoe/Building-RAG-Pipelines-With-LlamaIndex-{''.join(r.choice(HEX) for _ in range(12))}",
    ])


PACKAGES = ["torch", "numpy", "sentence-transformers", "transformers", "fastapi", "uvicorn", "pydantic", "hnswlib",
            "PyYAML", "scikit-learn", "onnxruntime-gpu", "psycopg[binary]", "requests", "Django", "Flask-SQLAlchemy"]
NPM = ["react", "@types/node", "@modelcontextprotocol/sdk", "typescript", "vite", "@anthropic-ai/sdk", "next"]


def version(r: random.Random) -> str:
    return f"{r.randint(0, 12)}.{r.randint(0, 40)}.{r.randint(0, 30)}"


def package_pin(r: random.Random) -> str:
    p = r.choice(PACKAGES)
    return r.choice([
        f"{p}=={version(r)}", f"{p}>={version(r)},<{r.randint(1, 13)}", f"{p}~={version(r)}",
        f"torch=={version(r)}+cu121", f"pip install '{p}[dev]>={version(r)}'", f"{r.choice(NPM)}@^{version(r)}",
        f"npm install {r.choice(NPM)}@{version(r)}", f"go get github.com/{r.choice(ORGS)}/client-go@v{version(r)}",
        f'serde = {{ version = "{version(r)}", features = ["derive"] }}', f"gem 'rails', '~> {version(r)}'",
        f"{p} @ git+https://github.com/{r.choice(ORGS)}/{p}@v{version(r)}",
    ])


STRIPE_IDS = ["cus", "pi", "ch", "in", "sub", "price", "prod", "evt", "acct", "pm", "seti", "txn", "re", "po", "cs_test"]


def base64ish(r: random.Random) -> str:
    """Identifiers of the base64 alphabet that are not secrets (names, digests, object ids)."""
    digest = hashlib.new(r.choice(["sha256", "sha384", "sha512"]), str(r.random()).encode()).digest()
    algo = {32: "sha256", 48: "sha384", 64: "sha512"}[len(digest)]
    return r.choice([
        body(r, 11, URLSAFE),                                                  # a YouTube video id
        f"{r.choice(STRIPE_IDS)}_{body(r, r.choice([14, 24]))}",                # a Stripe object id
        f"{algo}-{base64.b64encode(digest).decode()}",                          # subresource integrity / nix hash
        "".join(r.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(26)),   # a ULID
        "C" + "".join(r.choice(string.ascii_uppercase + string.digits) for _ in range(8)),   # a Slack channel id
        body(r, r.randint(8, 12), URLSAFE),                                     # a short nanoid
        f"api-server-{''.join(r.choice(HEX) for _ in range(10))}-{body(r, 5, string.ascii_lowercase + string.digits)}",
        f"i-0{''.join(r.choice(HEX) for _ in range(16))}",                      # an EC2 instance id
        "".join(r.choice(HEX) for _ in range(24)),                              # a MongoDB ObjectId
        f"{r.choice(['my', 'prod', 'acme'])}-project-{r.randint(100000, 999999)}",   # a GCP project id
        base64.b64encode(r.choice(["hello world", "user:alice", "plur", "ok"]).encode()).decode(),
        f"ENG-2026-0{r.randint(1, 9)}-1{r.randint(0, 9)}-{''.join(r.choice(HEX) for _ in range(6))}",
    ])


CODE_NAMES = ["useEffectHook2WithDependencyArray", "AbstractSingletonProxyFactoryBean", "getHTTPResponseCode2XXHandler",
              "XMLHttpRequest2EventTarget", "iPhone15ProMaxUltra2024Edition", "test_recall_memory_v2_handles_unicode",
              "Win32ErrorHandler2", "UIApplicationDelegateAdaptor", "kCFStreamPropertySSLSettings",
              "NSLocalizedDescriptionKey", "DefaultAzureCredentialOptions", "GL_TEXTURE_MAX_ANISOTROPY_EXT"]
PROSE = [
    "The password must be at least 12 characters and include a symbol.",
    "Reset your password at https://accounts.example.com/reset before Friday.",
    "The token limit is 4096 for this model.", "the secret is out", "password: required", "token: optional",
    "My password manager is 1Password, the vault is called Family.", "The API key is stored in the vault.",
    "the wifi password is on the fridge", "Use the --password flag to be prompted.", "password: changeme",
    "DB_PASSWORD=${DB_PASSWORD}", "OPENAI_API_KEY=os.environ['OPENAI_API_KEY']", "api_key: <your-key-here>",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}", "token_budget: 2000", "max_tokens=4096", "pad_token: [PAD]",
    "tokenizer.pad_token = tokenizer.eos_token", "eos_token: <|endoftext|>", "SECRET_KEY=None",
    "The password policy is 90 days.", "the secret santa budget is 20 euros", "API_KEY: ''",
    "Mein Passwort ist sicher im Tresor.", "Le mot de passe est dans le coffre.", "Mi contraseña es segura.",
    "La password è scaduta ieri.", "A senha expirou ontem.", "密码已经过期了。", "パスワードを忘れました。",
    "I changed the password yesterday, it is long now.", "The secret ingredient is cardamom.",
    "Set STRIPE_SECRET_KEY in the dashboard, not in the repo.", "export AWS_PROFILE=staging",
    "The token is in the vault.", "password reset link: https://example.com/reset?step=2",
]


def number(r: random.Random) -> str:
    return r.choice([
        f"+1 {r.randint(200, 999)}-{r.randint(200, 999)}-{r.randint(1000, 9999)}",
        f"+44 7{r.randint(100, 999)} {r.randint(100000, 999999)}",
        f"order #{r.randint(10**7, 10**9)}", f"{r.randint(1, 28):02d}/{r.randint(1, 12):02d}/{r.randint(1990, 2030)}",
        f"{r.randint(1990, 2030)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:00:00Z",
        f"{r.randint(1, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}:{r.randint(1, 65535)}",
        f"ISBN 978-{r.randint(0, 1)}-{r.randint(100, 999)}-{r.randint(10000, 99999)}-{r.randint(0, 9)}",
        f"{r.randint(1_600_000_000_000, 1_800_000_000_000)}", f"${r.randint(1, 99999):,}.{r.randint(0, 99):02d}",
        f"v{version(r)}", f"{r.randint(1, 999)} MiB", f"port {r.randint(1024, 65535)}",
        f"ticket JIRA-{r.randint(1, 99999)}", f"room {r.randint(100, 999)}, floor {r.randint(1, 30)}",
    ])


ORDINARY_KINDS = {
    "model-id": model_id, "file-path": file_path, "commit-hash": commit, "uuid": a_uuid, "image-tag": image_tag,
    "url": url, "package-pin": package_pin, "base64ish-id": base64ish, "number": number,
    "code-name": lambda r: r.choice(CODE_NAMES), "prose": lambda r: r.choice(PROSE),
}
SENTENCES = ["{}", "use {}", "I switched to {} yesterday.", "see {} for the details", "({})", "`{}`",
             "The default is {}, keep it.", "- {}", "{}: done"]


def ordinary(n_per_kind: int = 250, seed: int = 47) -> list[tuple[str, str]]:
    """``(kind, text)`` of ordinary strings: ``n_per_kind`` of each kind, alone or in a short sentence."""
    r = random.Random(seed)
    out = []
    for kind, make in ORDINARY_KINDS.items():
        for _ in range(n_per_kind):
            value = make(r)
            out.append((kind, value if kind == "prose" else r.choice(SENTENCES).format(value)))
    return out


# -- secrets --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One secret in a text: no string of ``gone`` may remain after the screen."""

    kind: str
    text: str
    gone: tuple[str, ...]


def luhn_complete(digits: str) -> str:
    """``digits`` with the Luhn check digit appended."""
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 == 0 else 1)
        total += n - 9 if n > 9 else n
    return digits + str((10 - total % 10) % 10)


def card(r: random.Random) -> str:
    prefix, length = r.choice([("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("2720", 16), ("34", 15),
                               ("37", 15), ("6011", 16), ("65", 16), ("3528", 16), ("3589", 16), ("36", 14), ("62", 16)])
    digits = luhn_complete(prefix + "".join(r.choice(string.digits) for _ in range(length - len(prefix) - 1)))
    sep = r.choice([" ", "-", ""])
    if length == 15:
        return sep.join([digits[:4], digits[4:10], digits[10:]])
    return sep.join(digits[i:i + 4] for i in range(0, length, 4))


def ssn(r: random.Random) -> str:
    area = r.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def dni(r: random.Random) -> str:
    n = r.randint(10**7, 10**8 - 1)
    return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"


def nie(r: random.Random) -> str:
    lead, n = r.randrange(3), r.randint(10**6, 10**7 - 1)
    return f"{'XYZ'[lead]}{n:07d}{'TRWAGMYFPDXBNJZSQVHLCKE'[int(f'{lead}{n:07d}') % 23]}"


def cpf(r: random.Random) -> str:
    d = [r.randint(0, 9) for _ in range(9)]
    for size in (9, 10):
        s = sum(v * (size + 1 - i) for i, v in enumerate(d[:size]))
        d.append((s * 10) % 11 % 10)
    s = "".join(map(str, d))
    return f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"


def cn_id(r: random.Random) -> str:
    region = f"{r.choice([11, 31, 44, 51, 61])}{r.randint(1, 99):02d}{r.randint(1, 99):02d}"
    born = f"{r.randint(1940, 2010)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    head = region + born + f"{r.randint(0, 999):03d}"
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return head + "10X98765432"[sum(int(c) * w for c, w in zip(head, weights)) % 11]


def nino(r: random.Random) -> str:
    first = r.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = r.choice("ABCEGHJKLMNPRSTWXYZ")
    if first + second in {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}:
        first, second = "A", "B"
    return f"{first}{second} {r.randint(0, 99):02d} {r.randint(0, 99):02d} {r.randint(0, 99):02d} {r.choice('ABCD')}"


def codice_fiscale(r: random.Random) -> str:
    odd = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23]
    head = ("".join(r.choice(string.ascii_uppercase) for _ in range(6)) + f"{r.randint(0, 99):02d}"
            + r.choice("ABCDEHLMPRST") + f"{r.randint(1, 71):02d}" + r.choice(string.ascii_uppercase)
            + f"{r.randint(0, 999):03d}")
    total = 0
    for i, c in enumerate(head):
        v = int(c) if c.isdigit() else ord(c) - 65
        total += odd[v] if i % 2 == 0 else v
    return head + chr(65 + total % 26)


def nir(r: random.Random) -> str:
    head = f"{r.randint(1, 2)}{r.randint(0, 99):02d}{r.randint(1, 12):02d}{r.randint(1, 95):02d}" \
           f"{r.randint(1, 990):03d}{r.randint(1, 999):03d}"
    return f"{head} {97 - int(head) % 97:02d}"


def said(r: random.Random, value: str) -> list[tuple[str, str]]:
    """(kind, sentence) saying ``value`` is a password, in the overview's languages."""
    return [
        ("said-en", f"My password for the company system is {value}"),
        ("said-en", f"the wifi password is {value}"), ("said-en", f"btw my github password: {value} (don't share)"),
        ("said-en", f"The password to the staging database is {value}, please keep it safe."),
        ("said-de", f"Mein Passwort für das Firmensystem ist {value}"), ("said-de", f"Das WLAN-Passwort lautet {value}."),
        ("said-fr", f"Mon mot de passe pour la banque est {value}"), ("said-fr", f"le mot de passe du wifi : {value}"),
        ("said-es", f"Mi contraseña del correo es {value}"), ("said-es", f"la clave del wifi es {value}"),
        ("said-it", f"La mia password del conto è {value}"), ("said-pt", f"Minha senha do banco é {value}"),
        ("said-pt", f"A palavra-passe do portal é {value}"),
        ("said-zh", f"我的邮箱密码是{value}，别告诉别人"), ("said-zh", f"wifi密码：{value}"),
        ("said-ja", f"私のパスワードは{value}です"), ("said-ja", f"Wi-Fiのパスワード: {value}"),
    ]


def passwordish(r: random.Random) -> str:
    word = r.choice(["Winter", "plumtree", "Summer", "Sunshine", "dragon", "Falcon", "orange", "Monkey", "Tiger"])
    return r.choice([f"{word}{r.randint(10, 2030)}{r.choice('!#$%&*')}", f"{word.lower()}{r.randint(10, 99)}",
                     f"{word}{r.choice('!#$@')}{r.randint(1, 999)}", f"{word[:3]}{body(r, 6)}{r.choice('!?#')}",
                     body(r, r.randint(8, 14), B62 + "!#$%&*@")])


def vendor_keys(r: random.Random) -> dict[str, str]:
    """One generated key per vendor shape (prefixes split so no literal key is in the source)."""
    return {
        "aws-access-key": "AK" + "IA" + "".join(r.choice(string.ascii_uppercase + "234567") for _ in range(16)),
        "github-token": "gh" + r.choice("pousr") + "_" + body(r, 36),
        "github-pat": "github" + "_pat_" + body(r, 22) + "_" + body(r, 59),
        "gitlab-token": "gl" + "pat-" + body(r, 20, URLSAFE),
        "openai-key": "sk" + "-" + body(r, 48),
        "openai-project-key": "sk" + "-proj-" + body(r, 64, URLSAFE),
        "anthropic-key": "sk" + "-ant-api03-" + body(r, 93, URLSAFE) + "AA",
        "slack-token": "xo" + "xb-" + f"{r.randint(10**9, 10**10)}-{r.randint(10**12, 10**13)}-" + body(r, 24),
        "slack-webhook": "https://hooks.slack.com/" + "services/T" + body(r, 8, string.ascii_uppercase + string.digits)
                         + "/B" + body(r, 8, string.ascii_uppercase + string.digits) + "/" + body(r, 24),
        "stripe-key": "sk" + "_live_" + body(r, 24),
        "google-api-key": "AI" + "za" + body(r, 35, URLSAFE),
        "huggingface-token": "h" + "f_" + body(r, 34),
        "npm-token": "np" + "m_" + body(r, 36),
        "jwt": "ey" + "J" + body(r, 30, URLSAFE) + "." + "ey" + "J" + body(r, 60, URLSAFE) + "." + body(r, 43, URLSAFE),
        "sendgrid-key": "S" + "G." + body(r, 22, URLSAFE) + "." + body(r, 43, URLSAFE),
        "shopify-token": "shp" + "at_" + "".join(r.choice(HEX) for _ in range(32)),
        "digitalocean-token": "do" + "p_v1_" + "".join(r.choice(HEX) for _ in range(64)),
        "pypi-token": "py" + "pi-AgEIcHlwaS5vcmc" + body(r, 70, URLSAFE),
        "vault-token": "hv" + "s." + body(r, 90, URLSAFE),
        "telegram-bot-token": f"{r.randint(10**8, 10**10)}:" + "AA" + body(r, 33, URLSAFE),
        "random-token": body(r, r.choice([24, 32, 40, 43]), URLSAFE),
        "base64-secret": base64.b64encode(r.randbytes(r.choice([24, 30, 33]))).decode(),
    }


def secret_cases(seed: int = 47, rounds: int = 12) -> list[Case]:
    """Secrets of many kinds, each in a sentence (``rounds`` of each kind, more for passwords said in words)."""
    r = random.Random(seed)
    out: list[Case] = []
    for _ in range(rounds):
        for kind, key in vendor_keys(r).items():
            template = r.choice(["The staging key is {}, keep it handy.", "export TOKEN={}", "{}",
                                 "use ({}) for the deploy", "curl -H 'Authorization: Bearer {}' https://api.example.com",
                                 "here: {}\nthanks"])
            out.append(Case(kind, template.format(key), (key,)))
        pem_body = "\n".join(body(r, 64, B64) for _ in range(4))
        out.append(Case("private-key", f"deploy key:\n-----BEGIN {r.choice(['RSA ', 'OPENSSH ', 'EC ', ''])}PRIVATE KEY-----"
                        f"\n{pem_body}\n-----END PRIVATE KEY-----\nuse it on web3", tuple(pem_body.split("\n"))))
        pw = passwordish(r)
        out.append(Case("url-password", f"the database is postgres://app:{pw}@db7.internal:5432/main", (pw,)))
        for kind, text in said(r, pw := passwordish(r)):
            out.append(Case(kind, text, (pw,)))
        name = r.choice(["DB", "POSTGRES", "ADMIN", "SMTP", "REDIS", "MYSQL_ROOT", "APP"])
        api = r.choice(["OPENAI", "ANTHROPIC", "STRIPE", "SENDGRID", "MAPBOX", "INTERNAL_SERVICE", "MY"])
        out += [Case("env-password", f"{name}_PASSWORD={pw}", (pw,)),
                Case("env-api-key", f"{api}_API_KEY={(v := passwordish(r))}", (v,)),
                Case("env-secret", f'export {api}_SECRET="{(v := passwordish(r))}"', (v,)),
                Case("env-token", f"{name}_TOKEN={(v := passwordish(r))}", (v,)),
                Case("yaml-password", f"database:\n  host: db7\n  {name.lower()}_password: {(v := passwordish(r))}\n", (v,)),
                Case("yaml-api-key", f"  api_key: '{(v := passwordish(r))}'", (v,)),
                Case("json-password", f'{{"user": "app", "password": "{(v := passwordish(r))}"}}', (v,)),
                Case("cli-password", f"mysql --user=root --password={(v := passwordish(r))} shop", (v,)),
                Case("bearer-token", f"Authorization: Bearer {(v := body(r, 18, URLSAFE))}", (v,))]
        c = card(r)
        out.append(Case("payment-card", r.choice(["my card is {}", "card: {} exp 04/27", "{}"]).format(c), (c,)))
        ids = {"us-ssn": ssn(r), "es-dni": dni(r), "es-nie": nie(r), "br-cpf": cpf(r), "cn-resident-id": cn_id(r),
               "uk-nino": nino(r), "it-codice-fiscale": codice_fiscale(r), "fr-nir": nir(r)}
        for kind, value in ids.items():
            out.append(Case(kind, r.choice(["my id number is {}", "{}", "ID: {} (scan attached)"]).format(value), (value,)))
    return out
