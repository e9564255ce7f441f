// SPDX-License-Identifier: Apache-2.0
// JIT code for tests/daemon/unwind/test_unwind_jit.c: a hot recursive function (V8 compiles it and does not
// inline it into itself), called through JIT-compiled callers (a recursion, a method chain) and
// a V8 builtin between them (Array.prototype.map), for SECS seconds.
// node --perf-basic-prof jit_hot.js SECS
'use strict';

function hotFib(n) {
  return n < 2 ? n : hotFib(n - 1) + hotFib(n - 2);
}

class Stage {
  constructor(next) {
    this.next = next;
  }

  run(n) {
    return this.next ? this.next.run(n) + 1 : [n].map(hotFib)[0];
  }
}

function descend(depth, n, stage) {
  return depth === 0 ? stage.run(n) : descend(depth - 1, n, stage) + 1;
}

function main(secs) {
  let stage = null;
  for (let i = 0; i < 4; i++) stage = new Stage(stage);
  const end = Date.now() + secs * 1000;
  let acc = 0;
  while (Date.now() < end) acc += descend(8, 22, stage);
  return acc;
}

console.log(main(Number(process.argv[2] || 5)));
