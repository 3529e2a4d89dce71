"""Is a note about the user (personal: recalled in every project) or about the code (stays in its project)?

Pure and deterministic (no LLM): :func:`about_user` weighs two sets of signs in the note's text.

* **The code's** (:func:`signs`, ``project``): code-shaped text, language-neutral (a file name or path,
  backticks, ``snake_case`` / ``camelCase`` / ``ENV_VARS``, a URL, ``localhost`` or a port, a ``--flag``, a
  three-part version), 3 points each; words that belong to software almost only (repo, deploy, endpoint,
  Docker, pytest...), 2 each; words that do in a coding chat but also in life (test, build, branch, app,
  release, server...), 1 each; "this repo / our app / the codebase", 3.
* **The user's** (``user``): the speaker (I, my, me), 1; family, pets, health, identity, home, hobbies, life
  events (daughter, dog, allergic, my name is, I live, violin, wedding...), 2 each; likes and habits
  ("I love", "favourite", "every Thursday"), 1 each. English first, with the common words of German, French,
  Spanish, Italian and Portuguese.

Code-shaped text decides for the project. Otherwise the note is about the user when its user signs outweigh
its code signs, or when it has neither and does not read as an instruction about work ("let's use the
second approach", "rename it"): a conversation's small talk is the user's. When the two tie, the project
keeps it if a sign of software only is among them (a project fact recalled in another project leaks, a
personal fact kept in its project is only missed there); words of both worlds alone ("team", "design",
"test") do not outweigh as many signs of the user.

Measured on ``tests/data/personal_notes.tsv`` (sentences written for the test, half each way) and on every
dialog turn of LoCoMo (all personal): ``tests/test_personal_notes.py``; docs/concepts/scopes.md#personal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Signs", "about_user", "signs"]

#: Code-shaped text: ``(what the text must hold for the kind to be looked for, the kind's pattern)``; the cheap
#: substring test first, so prose costs a few string scans (``++`` never backtracks).
_CODE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("`",), re.compile(r"`[^`\n]+`")),                                                 # backticks
    (("/",), re.compile(r"(?<![\w@/])(?:\.{1,2}|~)?/[\w.-]++(?:/[\w.-]*+)*+"          # ./app, ~/x, /etc/hosts
                        r"|[\w.-]++/[\w.-]++/|\b[\w-]++/(?=\s|$)")),                    # src/app/x, src/
    ((".",), re.compile(r"(?<=[\w-])\.(?:py|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|"
                        r"json|ya?ml|toml|ini|cfg|conf|lock|sh|bash|zsh|sql|html?|css|scss|env|xml|csv|proto|tf|"
                        r"gradle|ipynb|vue|svelte)\b|\d\.\d+\.\d")),                        # file.py, v1.2.3
    (("_",), re.compile(r"\b[a-z][a-z0-9]*+_[a-z0-9_]+\b|\b[A-Z][A-Z0-9]*+_[A-Z0-9_]+\b")),  # snake_case, ENV_VAR
    (("--", " -"), re.compile(r"(?<!\w)--?[a-z][\w-]*+(?:=\S+)?(?=\s|$)")),             # --flag, -x
    (("http", "localhost", "port ", ":"), re.compile(r"https?://|\blocalhost\b|\bport \d{2,5}\b|:\d{4,5}\b")),
    (("()", "=>", "->", "::", "==", "!=", "&&", "||"), re.compile(r"\w\(\)|=>|->|::|==|!=|&&|\|\|")),
)
#: camelCase (7+ letters), looked for only where a lower-case letter meets an upper-case one.
_CAMEL_HINT = re.compile(r"[a-z][A-Z]")
_CAMEL = re.compile(r"\b(?=\w{7})[a-z]{2,}[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)*\b")


def _code(text: str) -> bool:
    """Whether ``text`` holds code-shaped text (:data:`_CODE`)."""
    for needs, rx in _CODE:
        if any(n in text for n in needs) and rx.search(text):
            return True
    return _CAMEL_HINT.search(text) is not None and _CAMEL.search(text) is not None


_ANCHOR = re.compile(
    r"\b(?:this|our|the|that)\s+(?:repo|repository|codebase|code base|monorepo|package|library|module|api|backend|"
    r"front ?end|back ?end|service|microservice|server|build|pipeline|branch|component|schema|database|db|cli|"
    r"project's|workspace|test suite|tests|ci|deploy(?:ment)?|endpoint|sdk|plugin|extension|script|container|"
    r"cluster|staging|app's|web app|codebase's)\b"
    r"|\b(?:in|for|of)\s+(?:this|our)\s+(?:project|app|site|product|team)\b"
    r"|\b(?:dieses|diesem|unser(?:em|en)?)\s+(?:repo|projekt|code)\b|\b(?:ce|notre)\s+(?:dépôt|projet|code)\b"
    r"|\b(?:este|nuestro|questo|nostro|nosso)\s+(?:repo|proyecto|progetto|projeto|código|codice)\b")
_STRONG = frozenset("""
repo repos repository repositories codebase monorepo commit commits committed rebase rebased merge merged
deploy deploys deployed deploying deployment deployments endpoint endpoints api apis backend frontend database
databases db schema schemas migration migrations npm npx pnpm yarn pip pipx uv poetry cargo maven gradle
docker dockerfile kubernetes k8s helm terraform ansible nginx staging ci cd lint linter linting eslint prettier
ruff mypy pytest jest vitest mocha webpack vite rollup esbuild typescript javascript nodejs golang kotlin
django flask fastapi rails laravel nextjs nuxt postgres postgresql mysql sqlite redis mongodb elasticsearch
kafka rabbitmq graphql grpc json yaml toml localhost webhook webhooks websocket dependency dependencies
refactor refactored refactoring compiler compile compiles runtime regex traceback stacktrace segfault
sdk cli github gitlab bitbucket jira vercel netlify heroku cloudflare aws gcp azure s3 ec2 lambda
codegen openapi swagger oauth jwt tls ssl dns http https cors csrf middleware orm sql query queries
async await typescript's python's env dotenv config configs configuration microservice microservices
repo's hotfix rollback changelog semver prod pr prs readme linter's function functions variable variables
boolean integer enum struct interface interfaces typedef namespace stdout stderr stdin cron unittest
mock mocks fixture fixtures benchmark benchmarks latency throughput backlog kubectl gcloud dev devs
frontend's backend's pipeline pipelines dashboards dashboard vscode neovim intellij pycharm ide linux
ubuntu debian bash zsh shell csv tsv on-call oncall pagerduty dataset datasets retrain retrained retraining
monolith repos
""".split())
_WEAK = frozenset("""
test tests testing tested build builds building branch branches app apps application server servers release
releases released version versions bug bugs issue issues ticket tickets feature features code coding script
scripts file files folder folders directory log logs logging error errors exception crash crashes crashed
service services cache caching queue port ports token tokens flag flags module modules package packages
library libraries framework method methods model models index indexes cluster container
containers user users admin page pages site website component components
button modal spec specs requirement requirements deadline sprint standup roadmap milestone launch
product products ship shipping shipped stakeholder stakeholders vendor contract invoice invoices billing
payments checkout signup login onboarding analytics metrics kpi okr quarter budget review reviews reviewer
pull main master staging meeting meetings docs documentation python java ruby rust node react
vue angular svelte typescript linter editor terminal tabs spaces indentation formatter repo endpoint
performance cpu gpu disk storage bucket upload download sync api secret secrets password
passwords email emails notification notifications export exports import imports coverage report reports
data
""".split())
_SELF = frozenset("i i'm im i've i'd i'll my me mine myself ich mein meine meinen mich mir je j'ai moi mon ma mes "
                  "yo mi mis me io mio mia miei eu meu minha".split())
_LIFE = frozenset("""
wife husband partner spouse girlfriend boyfriend fiance fiancee fiancé fiancée daughter daughters son sons kid kids
child children baby babies toddler mom mum mother dad father parents parent sister sisters brother brothers
sibling siblings grandma grandmother grandpa grandfather grandparents grandkids aunt uncle cousin cousins niece
nephew inlaws in-laws family families wedding married marriage divorced divorce engaged pregnant pregnancy
dog dogs puppy puppies cat cats kitten kittens pet pets horse horses parrot hamster rabbit bunny
allergic allergy allergies asthma diabetes diabetic doctor doctors dentist therapist therapy medication
medications meds pills surgery injury injured pain migraine migraines diet vegan vegetarian gluten lactose
insomnia anxiety depression adhd autism hospital sick illness flu covid vaccine vaccinated cancer recovery
pregnant glasses contacts wheelchair blood
birthday born hometown nationality religion church mosque synagogue temple retired retirement graduated
graduation degree university college school grade homework teacher student students neighbour neighbor
apartment flat house home garden backyard car bike bicycle commute
vacation holiday holidays trip trips travel travelling traveling flight beach camping hiking hike
concert concerts movie movies film films book books novel novels reading music song songs album band
guitar piano violin drums singing sing dance dancing painting paint paints painted art artist drawing
photography photo photos pictures yoga gym workout running run marathon swim swimming soccer football
basketball tennis golf baseball hockey ski skiing surfing climbing fishing cooking cook baking bake recipe
recipes restaurant food dinner lunch breakfast coffee tea wine beer chocolate pizza friends friend friendship
party parties christmas thanksgiving easter halloween volunteer volunteering charity shelter love loved
lovely happy happiness sad grief miss missed proud excited nervous stressed tired lonely grateful thankful
feel feeling feelings emotions emotional dream dreams hobby hobbies weekend weekends summer winter spring
autumn fall sunset sunrise nature park lake mountain mountains ocean sea walk walks
frau mann tochter sohn kinder mutter vater schwester bruder hund katze geburtstag urlaub
femme mari fille fils enfants mère père soeur sœur frère chien chat anniversaire vacances
esposa esposo marido hija hijo hijos madre padre hermana hermano perro gato cumpleaños vacaciones
moglie marito figlia figlio figli madre padre sorella fratello cane gatto compleanno vacanze
esposa marido filha filho filhos mãe pai irmã irmão cachorro gato aniversário férias
""".split())
_LIKES = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|absolutely\s+|just\s+)?(?:like|love|hate|enjoy|prefer|adore|can't stand|dislike)\b"
    r"|\bfavou?rite\b|\bevery\s+(?:morning|evening|night|day|week|weekend|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|summer|winter|year)\b|\bon\s+(?:weekends|mondays|tuesdays|wednesdays|thursdays|fridays|"
    r"saturdays|sundays)\b|\bi\s+(?:usually|always|never|often|rarely|sometimes)\b|\bmy\s+name\s+is\b"
    r"|\bi(?:'m| am)\s+from\b|\bi\s+live\b|\byears?\s+old\b|\bi\s+was\s+born\b|\bin\s+my\s+free\s+time\b"
    r"|\b(?:wow|awesome|amazing|congrats|congratulations|sounds\s+(?:great|fun|good|amazing)|so\s+happy|"
    r"sorry\s+to\s+hear|take\s+care|miss\s+you|proud\s+of|way\s+to\s+go|keep\s+it\s+up|you\s+got\s+this|go\s+for\s+it|"
    r"good\s+luck|glad\s+to\s+hear|so\s+cool|that'?s\s+(?:great|awesome|amazing|cool|wonderful))\b")
#: The start of an instruction about work ("let's use...", "rename it"): a note with no other sign is the project's.
_DIRECTIVE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|now|then|also|and|please|pls|actually)[,\s]+)*(?:let'?s|let us|use|try|make|add|change|fix|"
    r"rename|move|implement|update|write|run|check|remove|delete|split|merge|keep|put|set|switch|replace|call|"
    r"return|wrap|extract|convert|handle|skip|ignore|revert|undo|bump|pin|drop|cache|prefer|avoid|always|never|"
    r"don'?t|do not|we (?:should|need|must|use|want|agreed|decided)|the (?:plan|goal|idea|approach|fix|problem) "
    r"is)\b"
    r"|^(?:the|our|all|every|each|any|no)\b[^.!?]*\b(?:must(?! have\b| be\b)|should(?! have\b| be\b)|has to|have to|"
    r"needs? to|is (?:managed|stored|kept|configured|set|defined|handled|generated|hosted)|are (?:managed|stored|kept|"
    r"configured|defined|handled|generated|hosted))\b", re.I)
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


@dataclass(frozen=True)
class Signs:
    """What :func:`signs` found in a note: ``project`` and ``user`` points (see the module docstring),
    ``code``: code-shaped text was found (it decides for the project), ``strong``: a word or phrase of
    software only (repo, deploy, "this codebase"), so a tie goes to the project."""

    project: int
    user: int
    code: bool
    strong: bool = False


@lru_cache(maxsize=4096)
def signs(text: str) -> Signs:
    """The code's and the user's signs in ``text`` (pure)."""
    code = _code(text)
    low = text.lower().replace("’", "'")
    words = _WORD.findall(low)
    anchors = len(_ANCHOR.findall(low))
    strong = sum(1 for w in words if w in _STRONG)
    project = 3 * anchors + 2 * strong + sum(1 for w in words if w in _WEAK and w not in _STRONG)
    user = 1 if any(w in _SELF for w in words) else 0
    user += sum(2 for w in set(words) if w in _LIFE) + len(_LIKES.findall(low))
    return Signs(project=project + (3 if code else 0), user=user, code=code, strong=bool(anchors or strong or code))


def about_user(text: str) -> bool:
    """Whether the note ``text`` is about the user (family, health, identity, preferences, habits, their life)
    rather than the code or the project's work. Pure; see the module docstring for the rule."""
    if not text or not text.strip():
        return False
    s = signs(text.strip()[:2000])
    if s.code:
        return False
    if s.project == 0 and s.user == 0:
        return _DIRECTIVE.match(text.strip()) is None
    return s.user > s.project or (not s.strong and s.user == s.project)


#: What a learn tool may say about its note: ``user`` (about the user: ``global``), ``project`` (it stays in the
#: scope given), ``auto`` (:func:`about_user` decides, when the setting ``route_personal`` is on).
ABOUT = ("user", "project", "auto")


def route(scope: str, about: str | None, statement: str, *, enabled: bool = True) -> str:
    """The scope a note goes to: ``scope`` unless ``about`` says the note is the user's (``user``, or ``auto``
    and :func:`about_user` with ``enabled``), then ``global``. Only a project scope is left for ``global`` by
    ``auto`` (an ``agent:`` scope is a host's choice of privacy). ``about=None``: ``scope`` as given.

    Raises:
        ValidationError: ``about`` is not one of :data:`ABOUT`.
    """
    if about is None:
        return scope
    if about not in ABOUT:
        from ...errors import ValidationError

        raise ValidationError(f"about {about!r}: use user (a note about the user, kept in global for every "
                              f"project), project (it stays in {scope}) or auto (plur decides)")
    if about == "user":
        return "global"
    if about == "auto" and enabled and scope.startswith("project:") and about_user(statement):
        return "global"
    return scope
