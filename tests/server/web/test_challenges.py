"""Who may challenge you, in the page: the setting beside one's name, the server's refusal
shown to the challenger, and the choice kept with the account across a reload."""

from __future__ import annotations

from .conftest import Tabs
from .pages import Page, login_as_guest


def choose(page: Page, policy: str) -> None:
    page.select_option("select.challenge-policy", policy)
    page.wait_for_selector(f'select.challenge-policy[data-policy="{policy}"]:not([disabled])')


def test_a_player_chooses_who_may_challenge_them(tabs: Tabs) -> None:
    target, challenger = tabs.open(), tabs.open()
    name = login_as_guest(target)
    login_as_guest(challenger)
    assert target.input_value("select.challenge-policy") == "everyone"

    choose(target, "nobody")
    challenger.click(f'li[data-user="{name}"] button')
    challenger.wait_for_function(
        "() => document.querySelector('.new-game .form-status').textContent.includes('nobody')")
    assert target.locator(".challenges .challenge").count() == 0

    choose(target, "registered")  # the challenger is a guest: still refused, saying why
    challenger.click(f'li[data-user="{name}"] button')
    challenger.wait_for_function("() => document.querySelector('.new-game .form-status')"
                                 ".textContent.includes('registered players only')")

    target.reload()  # the choice is the account's: the login after the reload tells it
    target.wait_for_selector('select.challenge-policy[data-policy="registered"]')
    assert target.input_value("select.challenge-policy") == "registered"

    choose(target, "everyone")
    challenger.click(f'li[data-user="{name}"] button')
    target.wait_for_selector(".challenges .challenge")
