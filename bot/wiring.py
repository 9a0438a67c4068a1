"""The composition root: the one place that chooses implementations and connects them."""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from adapters.web.page import Pages
from bot.settings import Settings
from core.control import reminding
from core.control.permissions import Policy
from core.control.reminding import Reminders
from core.control.scheduling import Scheduler, SchedulerConfig
from core.control.service import Service, ServiceConfig
from core.deliberation import routes
from core.deliberation.offline import OfflineLLM
from core.llm import AnthropicLLM, LLMConfig, SearchConfig
from core.llm_openai import OpenAICompatLLM, OpenAIConfig
from core.llm_router import RoutedLLM
from core.models import ModelRoutes
from core.ports import LLM, ChatPort, Clock, ShowsPlaceholders, SystemClock
from core.running.admission import Admission
from core.running.driver import SEND_LANDS_S, Driver, DriverConfig
from core.running.spending import Attempts, Limits
from core.showing.pages import PageLinks
from core.storage.db import make_engine, migrate
from core.storage.store import Store

log = logging.getLogger(__name__)


@dataclass
class App:
    settings: Settings
    store: Store
    llm: LLM
    driver: Driver
    service: Service
    clock: Clock
    scheduler: Scheduler | None = None  # long-running entry points keep time; the console does not

    async def close(self, grace_s: float = 60.0) -> None:
        """Stop timing, give running turns `grace_s` to finish, then close the database and the model's
        connections (the Anthropic client's aiohttp session)."""
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self.driver.shutdown(grace_s)
        await self.store.close()
        if isinstance(self.llm, RoutedLLM | AnthropicLLM | OpenAICompatLLM):
            await self.llm.aclose()


def page_links(settings: Settings) -> PageLinks:
    secret = settings.council_web_secret.get_secret_value() if settings.council_web_secret else ""
    return PageLinks(base_url=settings.council_public_url, secret=secret,
                     ttl=timedelta(days=settings.council_web_link_days))


def web_pages(settings: Settings, clock: Clock | None = None) -> Pages:
    """The discussion pages, mounted by `python -m bot slack` beside /slack/events and by `python -m bot web`."""
    return Pages(page_links(settings), clock or SystemClock())


def new_discussion_id() -> str:
    return secrets.token_hex(4)


def process_owner() -> str:
    """Identifies this process in leases: host and pid, so a restart on the same host can tell it died."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


# Stretches of model streams (16 events each) started in one pass of the event loop, in all: 2 a pass (the
# driver's own admission) cost about a fifth more CPU a model call and more transactions, grouped less; 12
# cost none that the bench could tell from the machine's drift.
STREAM_STRETCHES_A_PASS = 12


class ProviderKeyMissing(ValueError):
    """A configured provider's key variable is not set (its name is said, never a value)."""


def openai_providers(settings: Settings, environ: Mapping[str, str]) -> dict[str, OpenAIConfig]:
    """The OpenAI-compatible servers configured: "openai" from OPENAI_API_KEY (and OPENAI_BASE_URL), the others
    from COUNCIL_PROVIDERS, each key read from the variable it names."""
    common = {"prices": settings.council_prices, "timeout_s": settings.council_llm_timeout_s,
              "max_retries": settings.council_llm_max_retries}
    out: dict[str, OpenAIConfig] = {}
    if settings.openai_api_key is not None:
        out["openai"] = OpenAIConfig(provider="openai", base_url=settings.openai_base_url,
                                     api_key=settings.openai_api_key.get_secret_value(), **common)
    for name, spec in settings.council_providers.items():
        key = "unused"  # a self-hosted server takes any key, and the SDK sends one
        if spec.api_key_env:
            if not environ.get(spec.api_key_env):
                raise ProviderKeyMissing(f"COUNCIL_PROVIDERS[{name!r}] reads its key from {spec.api_key_env}, "
                                         "which is not set")
            key = environ[spec.api_key_env]
        out[name] = OpenAIConfig(provider=name, base_url=spec.base_url, api_key=key, json_schema=spec.json_schema,
                                 cap_field=spec.cap_field, **common)
    return out


def build_llm(settings: Settings, environ: Mapping[str, str] | None = None) -> LLM:
    """Every provider configured behind one router, or the offline model when none is."""
    # A few streams' stretches a pass of the loop, however many answers arrived together, whichever provider
    # they come from: with 300 discussions at once, /healthz's p99 fell from 214-318 ms to 57-73 ms, at the same
    # CPU a model call (bench/load.py).
    pause = Admission(STREAM_STRETCHES_A_PASS).turn
    providers: dict[str, LLM] = {name: OpenAICompatLLM(config, pause=pause)
                                 for name, config in openai_providers(settings, environ or os.environ).items()}
    if settings.anthropic_api_key is not None:
        providers["anthropic"] = _anthropic(settings, pause)
    if not providers:
        log.warning("No model provider is configured (ANTHROPIC_API_KEY, OPENAI_API_KEY, COUNCIL_PROVIDERS): "
                    "using the offline model; every post is labelled")
        return OfflineLLM(delay=settings.council_offline_delay_s)
    tiers = {t: ref for t, ref in settings.model_routes.tiers.items() if t in ("light", "medium", "heavy")}
    missing = routes.problems(settings.model_routes, providers, settings.council_prices)
    if missing:
        raise ValueError(f"COUNCIL_MODELS: {'; '.join(missing)}")
    return RoutedLLM(providers, tiers, priced=settings.council_prices)  # type: ignore[arg-type]


def _anthropic(settings: Settings, pause: Callable[[], Awaitable[None]]) -> AnthropicLLM:
    assert settings.anthropic_api_key is not None
    return AnthropicLLM(
        LLMConfig(
            models={
                "light": settings.council_model_light,
                "medium": settings.council_model_medium,
                "heavy": settings.council_model_heavy,
            },
            prices=settings.council_prices,
            timeout_s=settings.council_llm_timeout_s,
            effort=settings.council_turn_effort,
            synthesis_effort=settings.council_synthesis_effort,
            max_retries=settings.council_llm_max_retries,
            base_url=settings.anthropic_base_url,
            search=SearchConfig(max_uses=settings.council_search_max_uses,
                                allowed_domains=settings.search_domains[0],
                                blocked_domains=settings.search_domains[1],
                                price_per_search_usd=settings.council_search_price_usd),
            api_key=settings.anthropic_api_key.get_secret_value(),
        ),
        pause=pause,
    )


def attempts_of(llm: LLM) -> Attempts:
    """How many requests one call of this model may make, so that what a turn reserves covers them all: the real
    client's room retries and a fact check's continuations, as LLMConfig has them (build_llm keeps its defaults);
    any other model (offline, a test's) asks once."""
    if not isinstance(llm, RoutedLLM | AnthropicLLM | OpenAICompatLLM):
        return Attempts()
    room = LLMConfig.model_fields["room_attempts"].default
    return Attempts(room=room, legs=SearchConfig.model_fields["max_continuations"].default + 1)


async def build_app(
    settings: Settings,
    chats: Mapping[str, ChatPort],
    *,
    llm: LLM | None = None,
    clock: Clock | None = None,
    owner: str | None = None,
    scheduler: bool = False,
    wall: Clock | None = None,
) -> App:
    """Create or migrate the schema, then wire store, model, driver and service around the given chats;
    `scheduler=True` also starts the schedule timer (it leads on one replica at a time), whose jobs wait on `wall`
    (the real clock unless a test gives its own)."""
    engine = make_engine(settings.database_url)
    await migrate(engine, settings.encryption_key)
    store = Store(engine)
    clock = clock or SystemClock()
    llm = llm or build_llm(settings)
    owner = owner or process_owner()
    # SQLite: a restart resumes what its dead predecessor was driving, and nothing it sent is still on its way.
    sole = await store.claim_sole_process(owner)
    limits = Limits(workspace_usd_per_day=settings.council_workspace_budget_usd_per_day,
                    starts_per_user_per_hour=settings.council_starts_per_user_per_hour,
                    answer_interval_s=settings.council_answer_interval_s, tz=settings.council_default_tz,
                    turn_estimate_usd=settings.council_turn_estimate_usd,
                    process_usd_per_day=settings.council_process_daily_usd, attempts=attempts_of(llm))
    driver = Driver(store, llm, chats, clock, DriverConfig(owner=owner, lease_ttl=settings.lease_ttl_s,
                                                           context_rounds=settings.council_context_rounds,
                                                           limits=limits, pages=page_links(settings),
                                                           seat_wait_s=settings.council_seat_wait_min * 60,
                                                           send_lands_s=0.0 if sole else SEND_LANDS_S,
                                                           # benches run Slack's clock faster: live text with it
                                                           live_interval_s=1.0 / settings.slack_time_scale))
    for chat in chats.values():
        if isinstance(chat, ShowsPlaceholders):
            chat.placeholders = driver.placeholder_shown
    service = Service(store, driver, clock, new_discussion_id, ServiceConfig(
        budget_usd=settings.council_budget_usd, open_max_speeches=settings.council_open_max_speeches, limits=limits,
        # The offline model runs every route as itself: no discussion says it ran on a model it did not.
        fact_check=settings.council_fact_check,
        models=settings.model_routes if isinstance(llm, RoutedLLM) else ModelRoutes(),
        providers=frozenset(llm.providers) if isinstance(llm, RoutedLLM) else frozenset(),
        priced=frozenset(settings.council_prices),
        policy=Policy(admins=settings.admins, members_steer=settings.council_members_steer,
                      members_configure=settings.council_members_configure)))
    app = App(settings=settings, store=store, llm=llm, driver=driver, service=service, clock=clock)
    if scheduler:
        # Started on every replica; it fires a platform's rows only while this process holds that platform's lock.
        app.scheduler = Scheduler(store, service.schedules, clock, SchedulerConfig(
            platforms=tuple(chats), reload_s=settings.council_schedule_reload_s,
            leader_retry_s=settings.council_leader_retry_s, wall=wall or SystemClock()),
            closing=service.voting.close_at_deadline,
            reminding=(Reminders(store, clock, chats).remind, reminding.remind_at))
        service.schedules.on_changed = app.scheduler.poke
        await app.scheduler.start()
    return app
