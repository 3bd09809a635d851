"""The MCP conformance suite's reference server, built on the SDK's MCPServer, for the conformance test.

``@modelcontextprotocol/conformance`` runs its server scenarios against a server that has the
tools, resources and prompts they name (``test_simple_text``, ``test://static-text``,
``test_prompt_with_arguments``...), and its npm package does not ship that server. This one
implements what each scenario's own description (``conformance list --server``, the
scenario's "Server Implementation Requirements") asks for, so that every scenario measures
something: server-everything, the registry's stand-in, has none of those names.

Run: ``python conformance_server.py PORT`` (Streamable HTTP at ``http://127.0.0.1:PORT/mcp``).
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.utilities.types import Audio

server = MCPServer("conformance-reference", version="1.0.0")
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f80f0000010101005d0a2db40000000049454e44ae426082"
)
PNG_BASE64 = base64.b64encode(PNG).decode()
# a WAV file with no samples (mono, 16-bit, 44.1 kHz): the smallest well-formed audio
WAV = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 44100, 88200, 2, 16)
WAV += b"data" + struct.pack("<I", 0)


def _text_resource(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    )


@server.tool()
def test_simple_text() -> str:
    """Answers with one text."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Image:
    """Answers with a 1x1 PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def test_audio_content() -> Audio:
    """Answers with a WAV file."""
    return Audio(data=WAV, format="wav")


@server.tool()
def test_embedded_resource() -> list[types.EmbeddedResource]:
    """Answers with an embedded text resource."""
    return [_text_resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@server.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Answers with a text, an image and an embedded resource."""
    data = json.dumps({"test": "data", "value": 123})
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png"),
        _text_resource("test://mixed-content-resource", "application/json", data),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 while it runs."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100)
        await anyio.sleep(0.05)
    return "Tool with progress executed successfully"


@server.tool()
def test_error_handling() -> str:
    """Always fails: a tool error."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM (sampling/createMessage) and answers with what it said."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    result = await ctx.request_context.session.create_message(
        [message], max_tokens=100, related_request_id=ctx.request_id
    )
    text = result.content.text if isinstance(result.content, types.TextContent) else str(result.content)
    return f"LLM response: {text}"


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    return await ctx.request_context.session.elicit_form(message, schema, related_request_id=ctx.request_id)


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user (elicitation/create) for a user name and an email address."""
    properties = {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    }
    schema = {"type": "object", "properties": properties, "required": ["username", "email"]}
    result = await _elicit(ctx, message, schema)
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks the user for five values, each with a default (SEP-1034)."""
    properties = {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    }
    schema = {"type": "object", "properties": properties, "required": []}
    result = await _elicit(ctx, "Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.resource("test://static-text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", description="A static binary resource")
def static_binary() -> bytes:
    return PNG


@server.resource("test://template/{id}/data", mime_type="application/json", description="Data for an id")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt(description="A prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(description="A prompt with two arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(description="A prompt that embeds a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    resource = _text_resource(resourceUri, "text/plain", "Embedded resource content for testing.")
    return [UserMessage(content=resource), UserMessage(content="Please process the embedded resource above.")]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[UserMessage]:
    image = types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")
    return [UserMessage(content=image), UserMessage(content="Please analyze the image above.")]


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
    values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


async def _accept(ctx: Any, params: Any) -> types.EmptyResult:
    """resources/subscribe, resources/unsubscribe and logging/setLevel: accepted, nothing to keep."""
    return types.EmptyResult()


# MCPServer serves the 2026 revision's subscriptions/listen; the suite speaks 2025-06-18
for method, params in (
    ("resources/subscribe", types.SubscribeRequestParams),
    ("resources/unsubscribe", types.UnsubscribeRequestParams),
    ("logging/setLevel", types.SetLevelRequestParams),
):
    server._lowlevel_server.add_request_handler(method, params, _accept)


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
