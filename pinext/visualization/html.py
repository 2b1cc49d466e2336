"""The self-contained HTML page: meshcat's JavaScript bundle, the recorded scene commands and
a small script (URL fragment options, camera, time and phase line).

The page opens from disk and fetches nothing. The URL fragment selects a view: ``#t=1.5``
pauses at 1.5 s, ``controls=0`` hides the control panel, ``background=ffffff`` paints a uniform
background and hides the grid, ``info=0`` hides the time/phase line. ``window.pinextReady``
becomes true once the scene is loaded (and seeked).
"""

from __future__ import annotations

import base64
import gzip
import html as html_lib
import json
import struct
from pathlib import Path
from typing import Any

import meshcat
import umsgpack

from .camera import Framing
from .sampling import Frames

__all__ = ["RecordingWindow", "page"]


class RecordingWindow:
    """A meshcat window that records the commands instead of sending them to a server."""

    def __init__(self) -> None:
        self.commands: list[bytes] = []
        self.web_url = None

    def send(self, command: Any) -> None:
        """Record a command (msgpack bytes, as meshcat's server would receive it)."""
        self.commands.append(umsgpack.packb(command.lower()))

    def connect_zmq(self) -> None:  # pragma: no cover - meshcat API compatibility
        pass


def _meshcat_js() -> str:
    dist = Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js"
    return dist.read_text(encoding="utf-8").replace("</script", "<\\/script")


_SCRIPT = r"""
(async function () {
  const params = new URLSearchParams((location.hash || "").replace(/^#/, ""));
  const pane = document.getElementById("meshcat-pane");
  const viewer = new MeshCat.Viewer(pane);
  window.viewer = viewer;
  const info = JSON.parse(document.getElementById("pinext-info-data").textContent);
  const b64 = document.getElementById("pinext-scene").textContent.trim();
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream("gzip"));
  const buf = new Uint8Array(await new Response(stream).arrayBuffer());
  const view = new DataView(buf.buffer);
  const seek = params.has("t");
  for (let off = 0; off < buf.length; ) {
    const n = view.getUint32(off, true);
    off += 4;
    const bytes = buf.subarray(off, off + n);
    off += n;
    viewer.handle_command_bytearray(bytes);
  }
  if (info.camera) {
    const e = info.camera.eye, c = info.camera.target;
    viewer.camera.position.set(e[0], e[2], -e[1]);
    viewer.controls.target.set(c[0], c[2], -c[1]);
    viewer.controls.update();
  }
  if (params.get("background")) {
    const c = params.get("background");
    const rgb = [0, 2, 4].map((i) => parseInt(c.substr(i, 2), 16) / 255);
    viewer.scene.background = new MeshCat.THREE.Color(rgb[0], rgb[1], rgb[2]);
    for (const name of ["Grid", "Axes"]) viewer.set_property([name], "visible", false);
  }
  if (params.get("controls") === "0") viewer.gui.domElement.style.display = "none";
  const line = document.getElementById("pinext-info");
  if (params.get("info") === "0") line.style.display = "none";
  if (seek) {
    const t = parseFloat(params.get("t")) - info.t0;
    viewer.animator.pause();
    viewer.animator.seek(t);
    viewer.animator.display_progress(t);
  }
  function phaseAt(t) {
    let name = "";
    for (const p of info.phases) if (t + info.t0 >= p[0]) name = p[1];
    return name;
  }
  function update() {
    const t = viewer.animator.time || 0;
    const phase = phaseAt(t);
    line.textContent = info.title + "   t = " + (t + info.t0).toFixed(3) + " s" +
      (phase ? "   phase: " + phase : "");
    requestAnimationFrame(update);
  }
  update();
  viewer.set_dirty();
  requestAnimationFrame(() => requestAnimationFrame(() => { window.pinextReady = true; }));
})();
"""


def page(
    commands: list[bytes],
    frames: Frames,
    title: str,
    trajectory: Any,
    camera: Framing | None,
) -> str:
    """The HTML page of recorded meshcat commands.

    Args:
        commands: msgpack-encoded meshcat commands, replayed in order by the page.
        frames: The resampled trajectory (its start time).
        title: Page title, also on the time/phase line.
        trajectory: The trajectory (its phases).
        camera: Camera placement, or None for meshcat's default.
    """
    blob = b"".join(struct.pack("<I", len(c)) + c for c in commands)
    packed = base64.b64encode(gzip.compress(blob, compresslevel=9, mtime=0)).decode("ascii")
    phases = [[float(p.t_start), str(p.name)] for p in getattr(trajectory, "phases", [])]
    view = (
        {"eye": [float(x) for x in camera.eye], "target": [float(x) for x in camera.target]}
        if camera is not None
        else None
    )
    info = json.dumps({"title": title, "t0": float(frames.t[0]), "phases": phases, "camera": view})
    info = info.replace("<", "\\u003c")
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html_lib.escape(title)}</title>\n"
        "<style>body{margin:0;overflow:hidden}#meshcat-pane{width:100vw;height:100vh;"
        "overflow:hidden}#pinext-info{position:absolute;left:8px;bottom:8px;"
        "font:13px sans-serif;color:#222;background:rgba(255,255,255,.75);padding:3px 6px;"
        'border-radius:3px}</style>\n</head>\n<body>\n<div id="meshcat-pane"></div>\n'
        '<div id="pinext-info"></div>\n'
        f"<script>{_meshcat_js()}</script>\n"
        f'<script id="pinext-info-data" type="application/json">{info}'
        "</script>\n"
        f'<script id="pinext-scene" type="application/octet-stream">{packed}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )
