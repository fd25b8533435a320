// The board viewer of a ladder game page: draws each position of the game (the server's, from the
// rules, in #game-data) as SVG, stepped with the buttons or the keys (arrows, Home, End).
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("game-data").textContent);
  const svg = document.getElementById("board");
  const counter = document.getElementById("move-counter");
  const viewer = document.getElementById("board-viewer");
  const NS = "http://www.w3.org/2000/svg";
  const size = data.size;
  const hex = data.game === "Hex";
  const cell = 30;
  const margin = hex ? 24 : 38;  // Go: room for the coordinates outside the edge stones
  let shown = 0;

  function element(name, attributes) {
    const node = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
    return node;
  }

  // The centre of point (row, column): Go on a square grid; Hex on a rhombus, each row shifted half a cell.
  function centre(row, column) {
    if (hex) return [margin + column * cell + row * cell / 2, margin + row * cell * 0.866];
    return [margin + column * cell, margin + row * cell];
  }

  function drawGrid() {
    const width = hex ? margin * 2 + (size - 1) * cell * 1.5 : margin * 2 + (size - 1) * cell;
    const height = hex ? margin * 2 + (size - 1) * cell * 0.866 : margin * 2 + (size - 1) * cell;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.appendChild(element("rect", { x: 0, y: 0, width, height, fill: hex ? "#f4f1ea" : "#dcb35c" }));
    if (hex) {
      for (let r = 0; r < size; r++) for (let c = 0; c < size; c++) {
        const [x, y] = centre(r, c);
        svg.appendChild(element("circle", { cx: x, cy: y, r: cell * 0.45, fill: "none", stroke: "#999" }));
      }
      return;
    }
    for (let i = 0; i < size; i++) {
      const [x0, y0] = centre(i, 0), [x1, y1] = centre(i, size - 1);
      svg.appendChild(element("line", { x1: x0, y1: y0, x2: x1, y2: y1, stroke: "#333" }));
      const [a0, b0] = centre(0, i), [a1, b1] = centre(size - 1, i);
      svg.appendChild(element("line", { x1: a0, y1: b0, x2: a1, y2: b1, stroke: "#333" }));
    }
    drawCoordinates();
  }

  // Go's coordinates in the margins, as on a real board and in the move list (rules.py's GTP names):
  // letters A-T without I across, top and bottom; numbers up the sides, 1 at the bottom row.
  function drawCoordinates() {
    const letters = "ABCDEFGHJKLMNOPQRSTUVWXYZ";
    const group = element("g", { id: "coordinates", "font-size": 11, fill: "#333", "text-anchor": "middle",
                                 "dominant-baseline": "central", "font-family": "sans-serif" });
    const near = 15, far = margin * 2 + (size - 1) * cell - near;
    for (let i = 0; i < size; i++) {
      const [x, y] = centre(i, i);
      for (const [tx, ty, text] of [[x, near, letters[i]], [x, far, letters[i]],
                                    [near, y, String(size - i)], [far, y, String(size - i)]]) {
        const label = element("text", { x: tx, y: ty, class: "coord" });
        label.textContent = text;
        group.appendChild(label);
      }
    }
    svg.appendChild(group);
  }

  const stones = element("g", { id: "stones" });

  function show(index) {
    shown = Math.max(0, Math.min(data.positions.length - 1, index));
    stones.replaceChildren();
    const position = data.positions[shown];
    for (let i = 0; i < position.length; i++) {
      const point = position[i];
      if (point === ".") continue;
      const [x, y] = centre(Math.floor(i / size), i % size);
      stones.appendChild(element("circle", {
        cx: x, cy: y, r: cell * 0.46, class: point === "b" ? "stone black" : "stone white",
        fill: point === "b" ? "#111" : "#fafafa", stroke: "#111",
      }));
    }
    const total = data.positions.length - 1;
    const last = shown > 0 ? ` (${shown % 2 ? "black" : "white"} ${data.moves[shown - 1]})` : "";
    counter.textContent = `move ${shown} / ${total}${last}`;
    counter.dataset.move = String(shown);
  }

  const steps = {
    first: () => show(0),
    previous: () => show(shown - 1),
    next: () => show(shown + 1),
    last: () => show(data.positions.length - 1),
  };
  const keys = { ArrowLeft: "previous", ArrowRight: "next", Home: "first", End: "last" };

  for (const button of document.querySelectorAll("[data-step]")) {
    button.addEventListener("click", () => steps[button.dataset.step]());
  }
  viewer.addEventListener("keydown", (event) => {
    const step = keys[event.key];
    if (step) { event.preventDefault(); steps[step](); }
  });
  drawGrid();
  svg.appendChild(stones);
  show(data.positions.length - 1);  // open on the final position: how the game ended is what one came for
})();
