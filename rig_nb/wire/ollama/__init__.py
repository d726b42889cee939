"""Ollama's native wire (`/api/chat`): `shapes.py` (messages, replies, the model list),
`stream.py` (NDJSON lines read into a reply), `serve.py` (the server's side, for the local
servers), `wire.py` (the `Wire`)."""

from .shapes import ollama_body, parse_chat_body
from .stream import OllamaReader, read_ollama_stream
from .wire import OLLAMA, OllamaWire

__all__ = [
    "OLLAMA",
    "OllamaReader",
    "OllamaWire",
    "ollama_body",
    "parse_chat_body",
    "read_ollama_stream",
]
