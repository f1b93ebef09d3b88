"""Masking (vocabulary/masking.py): the secrets a server's URL carries, masked in the text shown."""

from __future__ import annotations

import pytest

from workbench_magic.vocabulary.masking import mask, url_secrets


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        ("https://h.example/mcp?token=abc123def", {"abc123def"}),
        ("https://h.example/mcp?api_key=k-1&page=2&apiKey=k-2", {"k-1", "k-2"}),
        ("https://h.example/mcp?access_token=a%2Fb%2Bc+d", {"a%2Fb%2Bc+d", "a/b+c d"}),
        ("https://h.example/mcp?X-Amz-Signature=f00d&client_secret=s3&Password=pw", {"f00d", "s3", "pw"}),
        ("https://user:pass%40word@h.example/mcp", {"pass%40word", "pass@word"}),
        ("https://h.example/mcp?page=2&q=token&token=", set()),  # a name, not a value; an empty value
        ("https://h.example/mcp", set()),
        ("http://[::1/mcp?token=abc123def", set()),  # not a URL: nothing found, no error
    ],
)
def test_url_secrets(url: str, secrets: set[str]) -> None:
    assert url_secrets(url) == secrets


def test_a_url_shows_masked() -> None:
    url = "https://me:hunter22@h.example/mcp?token=tok-123456&limit=10"
    assert mask(url, url_secrets(url)) == "https://me:***@h.example/mcp?token=***&limit=10"
