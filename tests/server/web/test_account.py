"""One's account in the page: a new password ends the account's login in another browser
at once; deleting the account logs out, and the name logs in no more."""

from __future__ import annotations

import pytest

import protocol as p
from clients.connection import ServerError

from .conftest import Tabs, WebServer, ask
from .test_ratings import log_in, register, unique

NEW_PASSWORD = "battery staple horse"


def test_a_new_password_then_the_account_deleted(tabs: Tabs, web_server: WebServer) -> None:
    name = unique("acct")
    mine, other = tabs.open(), tabs.open()  # two browsers: two logins of one account
    register(mine, name)
    log_in(other, name)

    mine.click("button.account-open")
    mine.fill("dialog.account-settings input[name=old-password]", "correct horse battery")
    mine.fill("dialog.account-settings input[name=new-password]", NEW_PASSWORD)
    mine.fill("dialog.account-settings input[name=again]", NEW_PASSWORD)
    mine.click("dialog.account-settings button:text-is('Change password')")
    mine.wait_for_selector("dialog.account-settings .form-status[data-ok]")
    other.wait_for_selector("button.login-open")  # its login ended (its token revoked)
    assert mine.text_content(".account .me") == name  # this one stays

    mine.fill("dialog.account-settings input[name=password]", NEW_PASSWORD)
    mine.click("dialog.account-settings button.delete")  # asks ...
    mine.click("dialog.account-settings button.delete.armed")  # ... and deletes
    mine.wait_for_selector("button.login-open")
    assert mine.locator("dialog.account-settings").count() == 0
    with pytest.raises(ServerError) as info:
        ask(web_server, p.Login, username=name, password=NEW_PASSWORD)
    assert info.value.code == "invalid_credentials"
