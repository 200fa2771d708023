"""Sign-in attempts are rate limited on the page and on the API token endpoint: one count
per client address and one per username, shared by the two, kept in the database so that
every server shares it too (tests/scale/test_shared_rate_limits.py runs two servers)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from rest_framework.test import APIClient

from studio.auth import in_words
from studio.conf import env_rate
from studio.gates.rate_limits import take_sign_in
from studio.models import SignInWindow

LIMIT = 5


@pytest.fixture(autouse=True)
def low_auth_rate(settings: Any) -> None:
    """Five a minute, and the attempts of a test within one minute's window: in the
    first seconds of the next, the one before still counts in full, so a test that
    straddled two would see no difference, but the limit need not be exact there."""
    settings.STUDIO_AUTH_RATE = (LIMIT, 60)
    if time.time() % 60 > 55:
        time.sleep(60 - time.time() % 60)


WRONG = "wrong"  # a guess


def sign_in(client: Client, username: str = "ada", password: str = WRONG) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password})


def exchange(api: APIClient, username: str = "ada", password: str = WRONG) -> Any:
    return api.post("/api/auth/token/", {"username": username, "password": password})


@pytest.mark.django_db
def test_the_sign_in_page_answers_429_once_the_attempts_are_used_up(ada: User) -> None:
    client = Client()
    for _ in range(LIMIT):
        wrong = sign_in(client)
        assert wrong.status_code == 200
        assert "Please enter a correct username and password." in wrong.content.decode()
    limited = sign_in(client, password="ada-password-1")
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60  # until the minute's window ends
    wait = limited["Retry-After"]
    assert f"Too many sign-in attempts. Try again in {wait} seconds." in limited.content.decode()
    assert "correct username and password" not in limited.content.decode()
    assert "_auth_user_id" not in client.session  # not even the right password gets in


@pytest.mark.django_db
def test_the_admins_sign_in_page_counts_against_the_same_limit(staff: User) -> None:
    """/admin/login/ is Django's own sign-in view: it must not be a way round the
    limit to guess a staff password (the accounts most worth guessing)."""
    client = Client()
    for n in range(LIMIT):
        if n % 2:  # the two pages share one count
            assert sign_in(client, username="stafford").status_code == 200
        else:
            wrong = client.post("/admin/login/", {"username": "stafford", "password": WRONG})
            assert wrong.status_code == 200
            assert "Please enter the correct username and password" in wrong.content.decode()
    limited = client.post(
        "/admin/login/?next=/admin/", {"username": "stafford", "password": "staff-password-1"}
    )
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    page = limited.content.decode()
    assert "Too many sign-in attempts. Try again in" in page
    assert 'id="login-form"' in page  # the admin's own page, to try again from
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/").status_code == 302  # still signed out


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (1, "1 second"),
        (42, "42 seconds"),
        (119, "119 seconds"),
        (120, "2 minutes"),
        (121, "3 minutes"),
        (3600, "60 minutes"),
    ],
)
def test_the_wait_is_told_in_seconds_then_minutes(seconds: int, words: str) -> None:
    assert in_words(seconds) == words


@pytest.mark.django_db
def test_guessing_one_account_from_many_addresses_is_limited_too(ada: User) -> None:
    for n in range(LIMIT):
        sign_in(Client(REMOTE_ADDR=f"203.0.113.{n}"), username="ADA")
    assert sign_in(Client(REMOTE_ADDR="203.0.113.99")).status_code == 429
    # another account from a fresh address still has its attempts
    assert sign_in(Client(REMOTE_ADDR="203.0.113.98"), username="bob").status_code == 200


DEVICE = "studio_device"


def a_browser_that_signed_in(username: str, password: str, page: str = "/accounts/login/") -> str:
    """Sign in from a browser of its own; the device cookie it was given."""
    client = Client(REMOTE_ADDR="192.0.2.1")
    answer = client.post(page, {"username": username, "password": password})
    assert answer.status_code == 302
    return client.cookies[DEVICE].value


def with_device(cookie: str, address: str = "192.0.2.1") -> Client:
    """A later visit of that browser (a new client: signing out would drop its cookies)."""
    client = Client(REMOTE_ADDR=address)
    client.cookies[DEVICE] = cookie
    return client


def guess_until_locked(username: str) -> None:
    """Someone else's guesses at ``username``, from many addresses, until the account's
    count is used up for browsers it does not know."""
    for n in range(LIMIT):
        sign_in(Client(REMOTE_ADDR=f"203.0.113.{n}"), username=username)
    assert sign_in(Client(REMOTE_ADDR="203.0.113.99"), username=username).status_code == 429


@pytest.mark.django_db
def test_guesses_at_an_account_do_not_lock_out_a_browser_that_signed_in_to_it(ada: User) -> None:
    """The account's count stops a distributed guess, but anyone could use it up to
    lock the user out: a browser that signed in to the account before carries a device
    cookie, and its attempts count against that device instead (and its address)."""
    cookie = a_browser_that_signed_in("ada", "ada-password-1")
    guess_until_locked("ada")
    client = with_device(cookie)
    assert sign_in(client, password="ada-password-1").status_code == 302
    assert client.session["_auth_user_id"] == str(ada.pk)


@pytest.mark.django_db
def test_a_device_cookie_has_a_limit_of_its_own(ada: User) -> None:
    """A stolen device cookie gets no more guesses than the account would have had."""
    cookie = a_browser_that_signed_in("ada", "ada-password-1")
    for n in range(LIMIT):
        assert sign_in(with_device(cookie, f"198.51.100.{n}")).status_code == 200
    stolen = with_device(cookie, "198.51.100.99")
    assert sign_in(stolen, password="ada-password-1").status_code == 429
    # the account's own count was not used: a browser it does not know still has room
    assert sign_in(Client(REMOTE_ADDR="198.51.100.98")).status_code == 200


@pytest.mark.django_db
def test_a_device_cookie_counts_only_for_its_account_and_cannot_be_forged(
    ada: User, staff: User
) -> None:
    cookie = a_browser_that_signed_in("ada", "ada-password-1")
    guess_until_locked("stafford")
    limited = with_device(cookie).post(
        "/accounts/login/", {"username": "stafford", "password": "staff-password-1"}
    )
    assert limited.status_code == 429  # ada's browser is not stafford's
    guess_until_locked("ada")
    payload, _, signature = cookie.rpartition(":")
    forged = f"{payload}:{signature[::-1]}"
    assert sign_in(with_device(forged), password="ada-password-1").status_code == 429
    assert sign_in(with_device(""), password="ada-password-1").status_code == 429


def signed_in_again(cookie: str, username: str, password: str, address: str) -> str:
    """The browser holding ``cookie`` signs in as ``username`` from ``address``; its new
    device cookie."""
    client = with_device(cookie, address)
    assert sign_in(client, username=username, password=password).status_code == 302
    return client.cookies[DEVICE].value


@pytest.mark.django_db
def test_a_browser_that_signed_in_to_two_accounts_is_known_to_both(ada: User, staff: User) -> None:
    """Signing in to a second account from a browser does not make it a stranger to the
    first: one person with two accounts is not locked out of either by guesses at it."""
    cookie = a_browser_that_signed_in("ada", "ada-password-1")
    cookie = signed_in_again(cookie, "stafford", "staff-password-1", "192.0.2.2")
    guess_until_locked("ada")
    guess_until_locked("stafford")
    for username, password in (("ada", "ada-password-1"), ("stafford", "staff-password-1")):
        client = with_device(cookie, "192.0.2.3")
        assert sign_in(client, username=username, password=password).status_code == 302


@pytest.mark.django_db
def test_a_device_cookie_remembers_five_accounts_and_has_one_count_for_them(
    django_user_model: type[User],
) -> None:
    names = [f"user{n}" for n in range(6)]
    for name in names:
        django_user_model.objects.create_user(name, password=f"{name}-password")
    cookie = a_browser_that_signed_in(names[0], f"{names[0]}-password")
    for n, name in enumerate(names[1:]):
        cookie = signed_in_again(cookie, name, f"{name}-password", f"192.0.2.{10 + n}")
    guess_until_locked(names[0])
    forgotten = with_device(cookie, "198.51.100.1")
    assert sign_in(forgotten, username=names[0], password="user0-password").status_code == 429
    # The five it remembers share the browser's one count: guesses at one of them use
    # up its attempts at the others too.
    for n in range(LIMIT):
        assert sign_in(with_device(cookie, f"198.51.100.{10 + n}"), names[1]).status_code == 200
    known = with_device(cookie, "198.51.100.99")
    assert sign_in(known, username=names[5], password="user5-password").status_code == 429


@pytest.mark.django_db
def test_a_device_cookie_given_before_it_named_several_accounts_still_counts(ada: User) -> None:
    from django.core import signing

    from studio.auth import _account

    device = {"a": _account("ada"), "d": "old-browser"}  # the form it had: one account
    cookie = signing.dumps(device, salt="studio.auth.device", compress=True)
    guess_until_locked("ada")
    client = with_device(cookie)
    assert sign_in(client, password="ada-password-1").status_code == 302
    assert "_auth_user_id" in client.session


@pytest.mark.django_db
def test_the_device_cookie_is_http_only_and_does_not_name_the_account(
    ada: User, settings: Any
) -> None:
    settings.SESSION_COOKIE_SECURE = True
    client = Client(REMOTE_ADDR="192.0.2.1")
    assert sign_in(client, password="ada-password-1").status_code == 302
    morsel = client.cookies[DEVICE]
    assert morsel["httponly"] and morsel["secure"] and morsel["samesite"] == "Lax"
    assert int(morsel["max-age"]) == 90 * 24 * 3600
    assert "ada" not in morsel.value.lower()
    # a wrong password gives no cookie
    other = Client(REMOTE_ADDR="192.0.2.2")
    assert sign_in(other).status_code == 200 and DEVICE not in other.cookies


@pytest.mark.django_db
def test_the_admins_sign_in_page_gives_and_honours_the_device_cookie(staff: User) -> None:
    cookie = a_browser_that_signed_in("stafford", "staff-password-1", page="/admin/login/")
    guess_until_locked("stafford")
    client = with_device(cookie)
    answer = client.post(
        "/admin/login/?next=/admin/", {"username": "stafford", "password": "staff-password-1"}
    )
    assert answer.status_code == 302
    assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
def test_the_token_endpoint_answers_429_once_the_attempts_are_used_up(ada: User) -> None:
    api = APIClient()
    for _ in range(LIMIT):
        assert exchange(api).status_code == 400
    response = exchange(api, password="ada-password-1")
    assert response.status_code == 429
    assert response.json()["code"] == "throttled"
    assert 1 <= int(response["Retry-After"]) <= 60


@pytest.mark.django_db
def test_the_token_endpoint_counts_the_account_across_addresses(ada: User) -> None:
    for n in range(LIMIT):
        assert exchange(APIClient(REMOTE_ADDR=f"198.51.100.{n}")).status_code == 400
    assert exchange(APIClient(REMOTE_ADDR="198.51.100.99")).status_code == 429


@pytest.mark.django_db
def test_the_page_and_the_token_endpoint_share_one_count(ada: User) -> None:
    """Alternating between the two gets no more attempts than either alone."""
    client, api = Client(), APIClient()
    statuses = [
        (sign_in(client).status_code if n % 2 else exchange(api).status_code)
        for n in range(LIMIT + 2)
    ]
    assert statuses == [400, 200, 400, 200, 400, 429, 429]


@pytest.mark.django_db
def test_a_token_request_that_is_not_an_object_is_counted_by_address(ada: User) -> None:
    api = APIClient()
    for _ in range(LIMIT):
        assert api.post("/api/auth/token/", ["ada"], format="json").status_code == 400
    assert exchange(api).status_code == 429


@pytest.mark.django_db
def test_the_window_before_counts_as_much_as_the_period_still_overlaps_it() -> None:
    """A sliding window from two counts: five attempts in the last seconds of one minute
    leave room for one more early in the next, not five (as fixed windows would)."""
    start = 1_000 * 60.0  # the start of a minute's window
    late = [take_sign_in(["ip:a"], start + 55 + n) for n in range(LIMIT)]
    assert late == [None] * LIMIT
    assert take_sign_in(["ip:a"], start + 61) is None  # 5 x 59/60 of the five count
    # 1 + 5 x 58/60 = 5.8: refused, until the five count for less than 4: 10 s on
    assert take_sign_in(["ip:a"], start + 62) == pytest.approx(10)
    # half-way through the minute, half of the five count: three in this window in all
    assert [take_sign_in(["ip:a"], start + 90 + n) for n in range(2)] == [None, None]
    assert take_sign_in(["ip:a"], start + 92) is not None
    assert take_sign_in(["ip:a"], start + 93) is not None
    # refused attempts were not counted: a client that keeps trying waits no longer
    assert windows() == [("ip:a", 1_000), ("ip:a", 1_001)]
    assert SignInWindow.objects.get(start=1_001).requests == 3


@pytest.mark.django_db
def test_a_full_window_waits_for_its_end_and_old_windows_are_dropped() -> None:
    start = 1_000 * 60.0
    assert [take_sign_in(["ip:a"], start + n) for n in range(LIMIT)] == [None] * LIMIT
    assert take_sign_in(["ip:a"], start + 10) == 50  # seconds until the window ends
    assert take_sign_in(["ip:a"], start + 90) is None  # half of the five count then
    take_sign_in(["ip:b"], start + 120)  # two windows on: "a"'s first window goes
    assert windows() == [("ip:a", 1_001), ("ip:b", 1_002)]
    take_sign_in(["ip:b"], start + 180)  # and then its second
    assert windows() == [("ip:b", 1_002), ("ip:b", 1_003)]


def windows() -> list[tuple[str, int]]:
    return list(SignInWindow.objects.order_by("start").values_list("key", "start"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("20/min", (20, 60)), ("3/s", (3, 1)), ("100/hour", (100, 3600)), (" 1/day ", (1, 86400))],
)
def test_a_rate_reads_as_a_count_and_seconds(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: tuple[int, int]
) -> None:
    monkeypatch.setenv("STUDIO_AUTH_THROTTLE_RATE", raw)
    assert env_rate("STUDIO_AUTH_THROTTLE_RATE", "20/min") == expected


@pytest.mark.parametrize("raw", ["20", "0/min", "-1/min", "20/fortnight", "x/min", ""])
def test_a_bad_rate_fails_loudly(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("STUDIO_AUTH_THROTTLE_RATE", raw)
    with pytest.raises(ImproperlyConfigured, match="STUDIO_AUTH_THROTTLE_RATE must be a rate"):
        env_rate("STUDIO_AUTH_THROTTLE_RATE", "20/min")
