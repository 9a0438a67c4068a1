"""Who sits at the table: the fixed roles and the experts generated for a topic (pure)."""

from __future__ import annotations

import re
import unicodedata

from core.deliberation import links
from core.deliberation.quoting import NAME_CHARS, clean
from core.deliberation.schemas import ExpertSpec
from core.models import Persona, Role

FIXED: list[Persona] = [
    Persona(
        key="moderator", name="Moderator", role=Role.MODERATOR, title="Facilitates, sets the agenda, converges",
        thinking_style="structured, neutral", bias="Wants a usable outcome",
        reply_tendency="Names who should answer what", icon=":classical_building:",
    ),
    Persona(
        key="historian", name="Historian", role=Role.HISTORIAN, title="Keeps the record, writes the syntheses",
        thinking_style="careful, evidence-first", bias="Distrusts claims nobody supported",
        reply_tendency="Attributes every point to who made it", icon=":scroll:",
    ),
    Persona(
        key="contrarian", name="Contrarian", role=Role.CONTRARIAN, title="Devil's advocate",
        thinking_style="adversarial, first-principles", bias="Assumes the consensus is missing something",
        reply_tendency="Asks 'is that really true?' and names the overlooked risk", icon=":smiling_imp:",
    ),
    Persona(
        key="cross_domain", name="Cross-Domain Thinker", role=Role.CROSS_DOMAIN,
        title="Brings analogies from other fields", thinking_style="associative",
        bias="Believes most problems were solved somewhere else first",
        reply_tendency="Draws a concrete parallel, then a framework", icon=":twisted_rightwards_arrows:",
    ),
]

# Takes part without a seat (never in the roster, the stance table or a vote): it checks the others' claims.
FACT_CHECKER = Persona(
    key="fact_checker", name="Fact-checker", role=Role.FACT_CHECKER, title="Checks claims against cited sources",
    thinking_style="sceptical, source-first", bias="Trusts what a source says, not what a persona remembers",
    reply_tendency="Marks each claim and shows where it looked", icon=":mag:",
)
VISITORS = {FACT_CHECKER.key: FACT_CHECKER}

EXPERT_ICONS = [":bulb:", ":gear:", ":bar_chart:", ":shield:", ":seedling:", ":compass:", ":microscope:", ":hammer:"]
RESERVED_KEYS = {p.key for p in FIXED} | set(VISITORS)


# Chat markup that notifies or links: Slack's <!here>, <@U1|name>, <#C1|name>, <!subteam^S1>, <https://…|text>,
# Discord's <@123>, <@!123>, <@&123>, <#123>, <t:…>; any <…> token goes whole, and so does a word that starts
# with @ or # (@everyone, @here, @channel, @dana, #general: what the adapters make of mentions). Then the
# emphasis and code marks of both platforms go.
_TOKEN = re.compile(r"<[^<>\n]*>|(?<!\S)[@#]\S*")
_MARKS = str.maketrans({ch: " " for ch in "<>@*_~`|[]\\"})


def clean_name(text: str, limit: int = NAME_CHARS) -> str:
    """A name or title as it may be shown and seated: no mentions, links or markup, no invisible characters,
    on one line, at most `limit` characters."""
    text = _TOKEN.sub(" ", clean(text)).translate(_MARKS)
    return " ".join(text.split())[:limit].strip()


def clean_title(text: str, limit: int = 120) -> str:
    """A seat's title as the roster shows it: `clean_name`, then an address it kept (a masked link's target, a bare
    domain) set as code, as in every post, so a title in Council's header never links where its words point.
    (Names are left as people wrote them: a display name such as `dana.smith` is a name, not an address.)"""
    return links.plain(clean_name(text, limit))


def slug(text: str, limit: int = 40) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    value = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")
    return value[:limit].strip("_") or "expert"


# Stand-ins when the model proposes fewer experts than asked, so a council never runs short-handed.
ARCHETYPES = [
    ExpertSpec(name="Practitioner", title="Hands-on practitioner", expertise=["day-to-day practice"],
               thinking_style="pragmatic", bias="Trusts what has worked before", reply_tendency="Gives examples"),
    ExpertSpec(name="Economist", title="Costs and incentives", expertise=["cost models", "incentives"],
               thinking_style="quantitative", bias="Follows the money", reply_tendency="Estimates costs"),
    ExpertSpec(name="Risk Analyst", title="What can go wrong", expertise=["failure modes", "mitigation"],
               thinking_style="cautious", bias="Weighs downside first", reply_tendency="Names failure modes"),
    ExpertSpec(name="User Advocate", title="The people affected", expertise=["user research"],
               thinking_style="empathetic", bias="Puts affected people first", reply_tendency="Tells user stories"),
]


def seats_from_lines(
    lines: list[str], *, role: Role, icons: list[str], reserved: str, limit: int, default_title: str = "{name}",
) -> list[Persona]:
    """`Name: what they bring` per line → one persona each (the part after a colon is the title), with keys
    unique among them and apart from the reserved seat (the referee, the moderator)."""
    out: list[Persona] = []
    for i, raw in enumerate(x for x in lines if clean_name(x.partition(":")[0])):
        name, _, title = raw.partition(":")
        name, title = clean_name(name), clean_title(title, 120)
        key = slug(name)
        while key in {p.key for p in out} or key == reserved:
            key = f"{key}_{i + 1}"
        out.append(Persona(key=key, name=name.strip()[:80], role=role,
                           title=(title.strip() or default_title.format(name=name.strip(),
                                                                        lower=name.strip().lower()))[:120],
                           icon=icons[i % len(icons)]))
    return out[:limit]


def experts_from_spec(specs: list[ExpertSpec], count: int) -> list[Persona]:
    personas: list[Persona] = []
    taken = set(RESERVED_KEYS)
    usable = [s for s in specs if clean_name(s.name)][:count]
    names = {clean_name(s.name).lower() for s in usable}
    usable += [a for a in ARCHETYPES if a.name.lower() not in names][: max(0, count - len(usable))]
    for i, spec in enumerate(usable[:count]):
        name = clean_name(spec.name)
        key = slug(name)
        while key in taken:
            key = f"{key}_{i + 1}"
        taken.add(key)
        personas.append(
            Persona(
                key=key,
                name=name or f"Expert {i + 1}",
                role=Role.EXPERT,
                title=clean_title(spec.title, 120),
                expertise=spec.expertise[:6],
                thinking_style=spec.thinking_style,
                bias=spec.bias,
                reply_tendency=spec.reply_tendency,
                icon=EXPERT_ICONS[i % len(EXPERT_ICONS)],
            )
        )
    return personas


def full_roster(experts: list[Persona]) -> list[Persona]:
    """Moderator first, then the experts, then the other fixed roles: the order people read."""
    return [FIXED[0], *experts, *FIXED[1:]]


def addressed(text: str, personas: list[Persona]) -> str:
    """The persona a human named in their message ("@Priya", "Contrarian, ..."), if exactly one."""
    lowered = text.lower()
    hits = []
    for p in personas:
        names = {p.name.lower(), p.name.split()[0].lower(), p.key.replace("_", " ")}
        if p.role != Role.EXPERT:
            names.add(p.role.value.replace("_", "-"))
        if any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", lowered) for n in names if len(n) >= 3):
            hits.append(p.key)
    return hits[0] if len(hits) == 1 else ""


def mentioned(text: str, personas: list[Persona], exclude: str = "") -> list[str]:
    """Keys of every persona a text names by full or first name (a direct address in a turn)."""
    lowered = text.lower()
    hits = []
    for p in personas:
        if p.key == exclude:
            continue
        names = {p.name.lower(), p.name.split()[0].lower()} if p.name.strip() else set()
        if any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", lowered) for n in names if len(n) >= 3):
            hits.append(p.key)
    return hits


def as_role(personas: list[Persona], role: Role) -> list[Persona]:
    return [p.model_copy(update={"role": role}) for p in personas]


def owner_line(raw: str) -> str:
    """`Name: domain` as it may be stored: both parts cleaned; "" when the name was nothing but markup."""
    name, colon, domain = raw.partition(":")
    name, domain = clean_name(name), clean_name(domain, 200)
    if not name:
        return ""
    return f"{name}: {domain}" if colon and domain else name


def owner_lines(raw: str) -> list[str]:
    """Domain owners as people type them: separated by semicolons or new lines, or by commas when there are
    none (`Dana: Billing, invoices; Eli: Mobile` keeps the comma inside Dana's domain); `off` → none."""
    raw = raw.strip()
    if not raw or raw.lower() == "off":
        return []
    return [p.strip() for p in re.split(r"[;\n]" if re.search(r"[;\n]", raw) else ",", raw) if p.strip()]
