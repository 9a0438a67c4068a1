"""Runtime settings from the environment (and `.env`): pydantic-settings, secrets kept as SecretStr."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.deliberation import routes
from core.llm import ModelPrice, default_prices
from core.models import ModelRoutes


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """`COUNCIL_*` variables no setting reads (a typo is silently ignored otherwise), each with the closest
    known name ("" when none is close)."""
    known = [name.upper() for name in Settings.model_fields if name.startswith("council_")]
    out = []
    for name in sorted(environ):
        if name.upper().startswith("COUNCIL_") and name.upper() not in known:
            close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.8)
            out.append((name, close[0] if close else ""))
    return out


class ProviderSpec(BaseModel):
    """An OpenAI-compatible server by name (COUNCIL_PROVIDERS): where it is, the environment variable holding its
    key (never the key itself: vLLM and Ollama need none), and what it supports."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    api_key_env: str = ""
    json_schema: bool = True  # false: structured answers are asked for as a forced tool call
    cap_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"


MIN_WEB_SECRET_BYTES = 32
Effort = Literal["low", "medium", "high", "xhigh", "max"]  # the API's output_config.effort levels


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str = "sqlite:///council.db"
    port: int = 3000

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    slack_client_id: str | None = None
    slack_client_secret: SecretStr | None = None
    # A commercially distributed app outside the Slack Marketplace: thread and history reads 1 a minute, 15 a page.
    slack_read_limited: bool = False
    slack_time_scale: float = 1.0  # benches only: Slack's rate limits counted this many times faster
    slack_rate_budget: bool = True  # benches of the app itself only: false spends no per-method budget

    discord_token: SecretStr | None = None
    discord_api_url: str = "https://discord.com/api/v10"
    council_discord_shard_guilds: int = 1000  # past this many guilds, run the AutoShardedClient

    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    openai_api_key: SecretStr | None = None  # the "openai" provider: api.openai.com, or OPENAI_BASE_URL
    openai_base_url: str | None = None
    # Further OpenAI-compatible servers, JSON by name: {"ollama": {"base_url": "http://localhost:11434/v1"},
    # "openrouter": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"}}.
    council_providers: dict[str, ProviderSpec] = Field(default_factory=dict)
    # Which provider and model each tier (and, optionally, each speaking seat or persona) runs on, e.g.
    # "light=openai:gpt-5.1-mini heavy=anthropic:claude-opus-5-5 openai:gpt-5.1 anthropic:claude-sonnet-5-5"
    # (core/deliberation/routes.py). A tier it leaves out runs on COUNCIL_MODEL_<TIER> at Anthropic.
    council_models: str = ""

    council_model_light: str = "claude-haiku-5-5"
    council_model_medium: str = "claude-sonnet-5-5"
    council_model_heavy: str = "claude-opus-5-5"
    # model id -> its rates (core/llm.py's table). COUNCIL_PRICES is JSON: per model, [input, output] US dollars
    # per million tokens, or an object with any of the rates' names (see `_over_the_table`); a model it names
    # keeps the table's other rates, and a model it leaves out keeps its row.
    council_prices: dict[str, ModelPrice] = Field(default_factory=default_prices)
    council_budget_usd: float = 5.0  # per discussion
    # Low by default: a public app is installed by strangers, each a workspace with a budget of its own.
    council_workspace_budget_usd_per_day: float = Field(default=10.0, ge=0)  # per Slack team / Discord guild; 0: none
    # The operator's cap for the whole deployment, every workspace and guild together (all replicas); 0: none.
    council_process_daily_usd: float = Field(default=50.0, ge=0)
    council_starts_per_user_per_hour: int = 5  # 0 means no limit
    council_turn_estimate_usd: float = 0.05  # what a discussion's first turns reserve of the daily budget
    council_answer_interval_s: float = 180.0  # at most one paid answer per person this often, between rounds
    # Ids of people, Slack user groups or Discord roles with admin rights, comma-separated.
    council_admins: str = ""
    council_members_steer: bool = True  # anyone in the channel may choose another round / deep dive / topic
    council_members_configure: bool = False  # channel members (not only admins) may set its meeting owners
    council_context_rounds: int = Field(default=2, ge=1)  # rounds prompts carry verbatim; older ones as syntheses
    council_seat_wait_min: float = Field(default=30.0, gt=0)  # a person's turn waits this long, then a stand-in
    council_open_max_speeches: int = Field(default=16, ge=2, le=200)  # the open floor closes by then at the latest
    council_llm_timeout_s: float = 120.0
    # How much the models think (output_config.effort): they think by default, and thinking counts toward each
    # call's max_tokens, which gets room for it. Turns, bids, structured outputs and fact checks; syntheses.
    council_turn_effort: Effort = "low"
    council_synthesis_effort: Effort = "medium"
    council_fact_check: bool = False  # "on": discussions check their claims unless started with --no-check
    council_search_max_uses: int = Field(default=5, ge=1, le=50)  # web searches per fact check at most
    council_search_allowed_domains: str = ""  # comma-separated: search only these (not with blocked domains)
    council_search_blocked_domains: str = ""  # comma-separated: never search these
    council_search_price_usd: float = Field(default=0.01, ge=0)  # per web search, counted in the budgets
    council_llm_max_retries: int = 3
    # Unset: 10 s leases swept every 3 s on PostgreSQL (a dead replica's discussions move again within ~13 s);
    # 60 s and 15 s on SQLite, whose one process takes its predecessor's leases over at start instead.
    council_lease_ttl_s: float | None = None
    council_sweep_interval_s: float | None = None
    council_schedule_reload_s: float = 10.0  # the scheduler leader re-reads the schedule table this often
    council_leader_retry_s: float = 15.0  # replicas that do not lead try to take the scheduler lock this often
    council_offline_delay_s: float = 0.0  # the offline model's pretend latency (demos, crash tests)
    council_default_tz: str = "UTC"
    council_public_url: str = ""  # base of links to discussion pages, e.g. https://council.example.com
    council_web_secret: SecretStr | None = None  # signs those links; without it there are no pages
    # Fernet key(s), newest first: stored credentials (OAuth installs' tokens) are encrypted under it.
    council_encryption_key: SecretStr | None = None
    council_web_link_days: int = 90  # how long a page link stays valid
    council_log_level: str = "INFO"

    @model_validator(mode="after")
    def _one_domain_list(self) -> Settings:
        if self.council_search_allowed_domains.strip() and self.council_search_blocked_domains.strip():
            raise ValueError("set COUNCIL_SEARCH_ALLOWED_DOMAINS or COUNCIL_SEARCH_BLOCKED_DOMAINS, not both: the "
                             "web search tool takes one list")
        return self

    @field_validator("council_models")
    @classmethod
    def _a_models_spec(cls, value: str) -> str:
        _, problems = routes.parse(value)
        if problems:
            raise ValueError(f"COUNCIL_MODELS: {'; '.join(problems)}")
        return value

    @field_validator("council_providers", mode="before")
    @classmethod
    def _providers(cls, value: object) -> object:
        """Each provider checked with a message that names it and the fields a provider takes."""
        if not isinstance(value, Mapping):
            raise ValueError('COUNCIL_PROVIDERS must be a JSON object: {"name": {"base_url": "...", '
                             '"api_key_env": "VARIABLE"}}')
        fields = ", ".join(ProviderSpec.model_fields)
        out: dict[str, ProviderSpec] = {}
        for name, given in value.items():
            if name in ("anthropic", "openai") or not routes.valid_provider(str(name)):
                raise ValueError(f"COUNCIL_PROVIDERS: {name!r} cannot name a provider (anthropic and openai have "
                                 "their own keys; use lower-case letters, digits, - and _)")
            try:
                out[name] = given if isinstance(given, ProviderSpec) else ProviderSpec.model_validate(given)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'spec'}: {e['msg']}"
                                     for e in exc.errors())
                raise ValueError(f"COUNCIL_PROVIDERS[{name!r}]: {problems} (fields: {fields})") from None
        return out

    @model_validator(mode="after")
    def _routes_have_providers(self) -> Settings:
        """Every model COUNCIL_MODELS (or a tier) names is on a configured provider and has a price; with no
        provider at all the offline model runs, and routes say nothing."""
        providers = {name for name, key in (("anthropic", self.anthropic_api_key), ("openai", self.openai_api_key))
                     if key is not None} | set(self.council_providers)
        problems = routes.problems(self.model_routes, providers, self.council_prices) if providers else []
        if "anthropic" not in providers and any(p.startswith("`anthropic`") for p in problems):
            problems.append("a tier COUNCIL_MODELS leaves out runs at Anthropic: name each tier (for example "
                            "`light=openai:gpt-5.1-mini medium=openai:gpt-5.1 heavy=openai:gpt-5.1`)")
        if problems:
            raise ValueError(f"COUNCIL_MODELS: {'; '.join(problems)}")
        return self

    @property
    def model_routes(self) -> ModelRoutes:
        """COUNCIL_MODELS over the Anthropic tier models."""
        given, _ = routes.parse(self.council_models)
        tiers = {"light": self.council_model_light, "medium": self.council_model_medium,
                 "heavy": self.council_model_heavy}
        return routes.layered(given, ModelRoutes(tiers={t: f"anthropic:{m}" for t, m in tiers.items()}))

    @property
    def search_domains(self) -> tuple[list[str], list[str]]:
        """The allowed and the blocked domains of the web search tool."""
        def split(raw: str) -> list[str]:
            return [x.strip() for x in raw.split(",") if x.strip()]
        return split(self.council_search_allowed_domains), split(self.council_search_blocked_domains)

    @field_validator("council_prices", mode="before")
    @classmethod
    def _over_the_table(cls, value: object) -> object:
        """COUNCIL_PRICES over the price table, each model checked with a message that names it and the rates."""
        if not isinstance(value, Mapping):
            raise ValueError('COUNCIL_PRICES must be a JSON object: {"model id": [input, output]} or {"model id": '
                             '{"input_per_mtok": ..., "cache_read_mult": ...}}')
        table = default_prices()
        names = ", ".join(ModelPrice.model_fields)
        out: dict[str, ModelPrice] = dict(table)
        for model, given in value.items():
            if isinstance(given, ModelPrice):
                out[model] = given
                continue
            if isinstance(given, list | tuple):
                if len(given) != 2:
                    raise ValueError(f"COUNCIL_PRICES[{model!r}]: a list gives [input, output] per million tokens")
                given = {"input_per_mtok": given[0], "output_per_mtok": given[1]}
            if not isinstance(given, Mapping):
                raise ValueError(f"COUNCIL_PRICES[{model!r}]: give [input, output] or an object of rates ({names})")
            row = table[model].model_dump() if model in table else {}
            try:
                out[model] = ModelPrice.model_validate({**row, **given})
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'rates'}: {e['msg']}"
                                     for e in exc.errors())
                raise ValueError(f"COUNCIL_PRICES[{model!r}]: {problems} (rates: {names})") from None
        return out

    @field_validator("council_turn_effort", "council_synthesis_effort", mode="before")
    @classmethod
    def _an_effort(cls, value: object, info: ValidationInfo) -> object:
        """Name the variable and its choices: the bare Literal error names neither."""
        levels = get_args(Effort)
        if value not in levels:
            raise ValueError(f"{str(info.field_name).upper()} must be one of {', '.join(levels)} (got {value!r})")
        return value

    @field_validator("council_web_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        """A page link's signature is only as strong as its key: refuse a guessable one at start."""
        if value is not None and len(value.get_secret_value().encode()) < MIN_WEB_SECRET_BYTES:
            raise ValueError(f"COUNCIL_WEB_SECRET must be at least {MIN_WEB_SECRET_BYTES} bytes (it signs page links); "
                             "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
        return value

    @property
    def encryption_key(self) -> str:
        return self.council_encryption_key.get_secret_value() if self.council_encryption_key else ""

    @property
    def admins(self) -> frozenset[str]:
        return frozenset(i.strip() for i in self.council_admins.split(",") if i.strip())

    @property
    def shared_database(self) -> bool:
        return not self.database_url.startswith("sqlite")

    @property
    def lease_ttl_s(self) -> float:
        if self.council_lease_ttl_s is not None:
            return self.council_lease_ttl_s
        return 10.0 if self.shared_database else 60.0

    @property
    def sweep_interval_s(self) -> float:
        if self.council_sweep_interval_s is not None:
            return self.council_sweep_interval_s
        return 3.0 if self.shared_database else 15.0
