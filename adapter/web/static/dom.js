/* The DOM builder both pages use (the compare page of `hybrid serve`, the evaluation report):
 * el(tag, attrs, ...children). attrs: class, text (the textContent), on<event> listeners, any other
 * as an attribute (true: present and empty; null, undefined or false: left out). Children: nodes, or
 * any other value as a text node, so nothing a page shows is parsed as HTML. */
(function () {
  "use strict";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  /* A text cut to at most n characters the way adapter/search/excerpt.py cuts it (a test holds the two
   * equal): whole when it fits; else its start up to a word boundary, then "…". */
  const UNSPACED = /[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]/u;
  const COMBINING = /^\p{M}$/u;
  const SPACE = /^\s$/u;
  function excerpt(text, n) {
    const chars = Array.from(text || "");  // code points, as Python counts them
    if (chars.length <= n) return chars.join("");
    const room = n - 1;
    const boundary = (b, a) => !COMBINING.test(a) && (SPACE.test(a) || SPACE.test(b) || UNSPACED.test(b) || UNSPACED.test(a));
    const inside = () => { let i = room; while (i > 0 && COMBINING.test(chars[i])) i -= 1; return i || room; };
    let cut = -1;
    for (let i = room; i > Math.floor(room / 2); i -= 1) if (boundary(chars[i - 1], chars[i])) { cut = i; break; }
    if (cut < 0) cut = inside();
    const kept = chars.slice(0, cut).join("").replace(/\s+$/u, "") || chars.slice(0, inside()).join("");
    return kept + "…";
  }

  window.Dom = { el, excerpt };
})();
