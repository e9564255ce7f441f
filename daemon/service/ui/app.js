// SPDX-License-Identifier: Apache-2.0
// xsprof's web view: asks xsprofd's API (same origin) and draws what it answers. Every name it
// shows comes from profiled processes, so text goes in with textContent, never as HTML.
'use strict';

const $ = (sel) => document.querySelector(sel);
const REFRESH_MS = 2000; // status and the strip
const PROFILE_MS = 10000; // the live flamegraph: the window changes by 10 s slices
const ROW = 18;
const MAX_FRAMES = 8000; // drawn per flamegraph; narrower frames are not drawn
const MAX_GPU_ITEMS = 6000;
const KIND = { 1: 'kernel', 2: 'copy', 3: 'memset', 4: 'sync', 5: 'graph' };
const SYNC = 4; // the host waited on a stream: drawn, not counted as GPU work

const S = {
	token: '',
	source: '', // '' the machine's window, else an attached pid
	range: null, // {from, to}: the daemon's monotonic ms
	base: null, // compare: the baseline range
	stacks: [], // [[frames], weight]
	baseStacks: null,
	query: '', // what S.stacks answered
	profileAt: 0, // when (Date.now()) it was fetched
	zoom: [], // frame names from the root down to the zoomed frame
	timeline: null,
	gpu: null,
	gpuDump: '', // the dump whose timeline S.gpu is ('' a recording)
	dumpsKey: null, // what the Dumps table was drawn from
	manifests: new Map(), // a done dump's name: its manifest (null: unreadable)
	busy: false,
	historyOnly: false, // xsprofctl ui --history without xsprofd: the live panels hidden
};

// ---- the API ----

function takeToken() {
	const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
	if (m) {
		S.token = decodeURIComponent(m[1]);
		sessionStorage.setItem('xsprof-token', S.token);
		// Out of the address bar (and of screenshots); kept for reloads of this tab.
		history.replaceState(null, '', location.pathname + location.search);
	} else {
		S.token = sessionStorage.getItem('xsprof-token') || '';
	}
}

async function api(path) {
	const headers = S.token ? { Authorization: 'Bearer ' + S.token } : {};
	const r = await fetch(path, { headers, cache: 'no-store', credentials: 'same-origin' });
	if (!r.ok) {
		let msg = 'HTTP ' + r.status;
		try {
			const j = await r.json();
			msg = j.error + (j.hint ? ' (' + j.hint + ')' : '');
		} catch (e) { /* not JSON: keep the status */ }
		const err = new Error(path.split('?')[0] + ': ' + msg);
		err.status = r.status;
		throw err;
	}
	return r;
}

function showError(msg) {
	const e = $('#error');
	e.hidden = !msg;
	e.textContent = msg || '';
}

// ---- folded stacks and the tree ----

function parseFolded(text) {
	const out = [];
	for (const line of text.split('\n')) {
		if (!line || line[0] === '#')
			continue;
		const sp = line.lastIndexOf(' ');
		const n = Number(line.slice(sp + 1));
		if (sp > 0 && n > 0)
			out.push([line.slice(0, sp).split(';'), n]);
	}
	return out;
}

function newNode(name) {
	return { name, value: 0, base: 0, children: new Map() };
}

function addStack(root, frames, n, field) {
	let node = root;
	node[field] += n;
	for (const f of frames) {
		let c = node.children.get(f);
		if (!c) {
			c = newNode(f);
			node.children.set(f, c);
		}
		c[field] += n;
		node = c;
	}
}

function selected(stacks) {
	const p = $('#process').value;
	return p ? stacks.filter((s) => s[0][0] === p) : stacks;
}

function buildTree() {
	const root = newNode('all');
	for (const [frames, n] of selected(S.stacks))
		addStack(root, frames, n, 'value');
	if (S.baseStacks) {
		for (const [frames, n] of selected(S.baseStacks))
			addStack(root, frames, n, 'base');
		// The baseline scaled to the same total: a change of share, not of length.
		const scale = root.base ? root.value / root.base : 0;
		(function norm(node) {
			node.base *= scale;
			node.children.forEach(norm);
		})(root);
	}
	return root;
}

// ---- drawing the flamegraph ----

function hash(s) {
	let h = 2166136261;
	for (let i = 0; i < s.length; i++)
		h = Math.imul(h ^ s.charCodeAt(i), 16777619);
	return (h >>> 0) / 4294967296;
}

function colour(node) {
	if (S.baseStacks) {
		const d = node.value - node.base, m = Math.max(node.value, node.base, 1);
		const k = Math.min(1, Math.abs(d) / m);
		const c = Math.round(255 - 170 * k);
		return d >= 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`;
	}
	const h = hash(node.name);
	if (node.name.startsWith('[gpu]'))
		return `hsl(130,${45 + 20 * h}%,${55 + 10 * h}%)`;
	if (node.name.startsWith('[wait gpu]'))
		return `hsl(210,60%,${65 + 10 * h}%)`;
	if (node.name.endsWith('_[k]'))
		return `hsl(30,${60 + 20 * h}%,${60 + 10 * h}%)`;
	return `hsl(${10 + 35 * h},${70 + 20 * h}%,${58 + 10 * h}%)`;
}

function searchRegex() {
	const q = $('#search').value;
	if (!q)
		return null;
	try {
		return new RegExp(q, 'i');
	} catch (e) {
		return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
	}
}

function fmt(v) {
	const unit = $('#weight').value === 'us' ? ' us' : ' samples';
	return Math.round(v).toLocaleString('en') + unit;
}

function renderFlame(root) {
	const el = $('#flame');
	el.textContent = '';
	let top = root;
	for (const name of S.zoom) {
		const c = top.children.get(name);
		if (!c)
			break;
		top = c;
	}
	$('#unzoom').hidden = top === root;
	const width = el.clientWidth || 1000;
	const re = searchRegex();
	const frag = document.createDocumentFragment();
	let drawn = 0, depthMax = 0, matched = 0;

	function draw(node, path, x, w, depth, inMatch) {
		if (w < 0.5 || drawn >= MAX_FRAMES)
			return;
		const d = document.createElement('div');
		const isMatch = re && re.test(node.name);
		d.className = 'frame' + (isMatch ? ' match' : '');
		d.style.left = x.toFixed(1) + 'px';
		d.style.top = depth * ROW + 'px';
		d.style.width = w.toFixed(1) + 'px';
		d.style.background = colour(node);
		if (w > 24)
			d.textContent = node.name;
		d.dataset.name = node.name;
		d.dataset.value = String(node.value);
		d.title = node.name;
		d.xsNode = node;
		d.xsPath = path;
		frag.appendChild(d);
		drawn++;
		depthMax = Math.max(depthMax, depth);
		if (isMatch && !inMatch)
			matched += node.value;
		let cx = x;
		const kids = [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
		for (const c of kids) {
			const cw = (w * c.value) / (node.value || 1);
			draw(c, path.concat(c.name), cx, cw, depth + 1, inMatch || isMatch);
			cx += cw;
		}
	}
	if (top.value)
		draw(top, S.zoom.slice(), 0, width, 0, false);
	el.appendChild(frag);
	el.style.height = (top.value ? depthMax + 1 : 1) * ROW + 'px';
	$('#total').textContent = top.value ? 'total ' + fmt(root.value) : 'nothing sampled here yet';
	$('#total').dataset.value = String(root.value);
	const sr = $('#search-result');
	sr.textContent = re ? `matched ${fmt(matched)} (${pct(matched, top.value)})` : '';
	sr.dataset.value = String(matched);
}

function pct(a, b) {
	return b ? ((100 * a) / b).toFixed(1) + '%' : '0%';
}

function renderTop() {
	const self = new Map(), total = new Map();
	let all = 0;
	for (const [frames, n] of selected(S.stacks)) {
		all += n;
		const leaf = frames[frames.length - 1];
		self.set(leaf, (self.get(leaf) || 0) + n);
		for (const f of new Set(frames))
			total.set(f, (total.get(f) || 0) + n);
	}
	const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30);
	const body = $('#top tbody');
	body.textContent = '';
	for (const [name, n] of rows) {
		const tr = document.createElement('tr');
		for (const t of [pct(n, all), pct(total.get(name), all), name]) {
			const td = document.createElement('td');
			td.textContent = t;
			tr.appendChild(td);
		}
		tr.dataset.name = name;
		tr.addEventListener('click', () => {
			$('#search').value = '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
			redraw();
		});
		body.appendChild(tr);
	}
}

function updateProcesses() {
	const sel = $('#process'), keep = sel.value;
	const seen = new Map();
	for (const [frames, n] of S.stacks)
		seen.set(frames[0], (seen.get(frames[0]) || 0) + n);
	const names = [...seen.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0]);
	if (keep && !seen.has(keep))
		names.push(keep);
	while (sel.options.length > 1)
		sel.remove(1);
	for (const n of names)
		sel.add(new Option(n, n));
	sel.value = keep;
}

function redraw() {
	renderFlame(buildTree());
	renderTop();
}

// ---- the strip and its brush ----

function stripSpan() {
	const tl = S.timeline;
	const now = tl ? tl.now_ms : 0;
	return { t0: now - Number($('#since').value) * 1000, t1: now };
}

function renderStrip() {
	const el = $('#strip'), tl = S.timeline;
	el.textContent = '';
	if (!tl)
		return;
	const { t0, t1 } = stripSpan();
	const w = el.clientWidth || 1000, h = el.clientHeight || 60;
	const x = (t) => ((Math.max(t, t0) - t0) / (t1 - t0)) * w;
	let max = 1;
	for (const [s, e, n] of tl.cpu)
		if (e > s)
			max = Math.max(max, (n * 1000) / (e - s));
	for (const [s, e, n] of tl.cpu) {
		if (e <= t0 || e <= s)
			continue;
		const b = document.createElement('div');
		b.className = 'bar';
		const rate = (n * 1000) / (e - s);
		b.style.left = x(s) + 'px';
		b.style.width = Math.max(1, x(e) - x(s) - 1) + 'px';
		b.style.height = Math.round((h * rate) / max) + 'px';
		b.title = `${rate.toFixed(0)} samples/s`;
		el.appendChild(b);
	}
	for (const [s, e, us] of tl.gpu) {
		if (e <= t0 || e <= s)
			continue;
		const b = document.createElement('div');
		b.className = 'gbar';
		const busy = Math.min(1, us / ((e - s) * 1000));
		b.style.left = x(s) + 'px';
		b.style.width = Math.max(1, x(e) - x(s) - 1) + 'px';
		b.style.height = Math.round(h * busy) + 'px';
		b.title = `GPU work ${(100 * busy).toFixed(0)}% of the time`;
		el.appendChild(b);
	}
	for (const [r, cls] of [[S.base, 'sel base'], [S.range, 'sel']]) {
		if (!r)
			continue;
		const b = document.createElement('div');
		b.className = cls;
		b.style.left = x(r.from) + 'px';
		b.style.width = Math.max(2, x(r.to) - x(r.from)) + 'px';
		el.appendChild(b);
	}
	const txt = (r) => `${((t1 - r.from) / 1000).toFixed(0)} s to ${((t1 - r.to) / 1000).toFixed(0)} s ago`;
	$('#range').textContent = S.range
		? (S.base ? 'baseline ' + txt(S.base) + ' vs ' : '') + txt(S.range)
		: S.base
			? 'baseline ' + txt(S.base) + ': now drag the range to compare'
			: '';
}

function brush() {
	const el = $('#strip');
	let start = null, box = null;
	const toMs = (px) => {
		const { t0, t1 } = stripSpan();
		return Math.round(t0 + (px / (el.clientWidth || 1)) * (t1 - t0));
	};
	el.addEventListener('mousedown', (ev) => {
		start = ev.clientX - el.getBoundingClientRect().left;
		box = document.createElement('div');
		box.className = 'sel';
		box.style.left = start + 'px';
		box.style.width = '0px';
		el.appendChild(box);
	});
	window.addEventListener('mousemove', (ev) => {
		if (start === null)
			return;
		const px = ev.clientX - el.getBoundingClientRect().left;
		box.style.left = Math.min(px, start) + 'px';
		box.style.width = Math.abs(px - start) + 'px';
	});
	window.addEventListener('mouseup', (ev) => {
		if (start === null)
			return;
		const px = Math.max(0, Math.min(el.clientWidth, ev.clientX - el.getBoundingClientRect().left));
		const a = Math.min(px, start), b = Math.max(px, start);
		start = null;
		if (b - a < 3) {
			renderStrip();
			return;
		}
		const r = { from: toMs(a), to: toMs(b) };
		if ($('#compare').checked && !S.base)
			S.base = r;
		else
			S.range = r;
		S.zoom = [];
		refresh();
	});
	el.addEventListener('dblclick', () => {
		S.range = S.base = null;
		refresh();
	});
}

// ---- status ----

function renderStatus(st) {
	const bar = $('#status-bar');
	bar.textContent = '';
	const item = (label, value, warn) => {
		const s = document.createElement('span');
		const b = document.createElement('b');
		b.textContent = label + ' ';
		s.appendChild(b);
		s.appendChild(document.createTextNode(String(value)));
		if (warn)
			s.className = 'warn';
		bar.appendChild(s);
	};
	const c = st.counters || {}, cost = st.cost || {}, mem = st.memory || {}, store = st.store || {};
	item('xsprofd', `${st.version || ''}, up ${Math.round(st.uptime_s || 0)} s, ${st.freq_hz} Hz`);
	item('attached', (st.attachments || []).map((a) => `${a.pid} (${a.state})`).join(', ') || 'none');
	item('samples', (c.samples || 0).toLocaleString('en'));
	const lost = (c.lost || 0) + (store.dropped_samples || 0);
	item('lost', lost.toLocaleString('en'), lost > 0);
	const caps = (st.processes || {}).records_over_user_budget || 0;
	const refused = (st.unwind || {}).processes_over_user_share || 0;
	item('caps hit', `${caps + refused + (store.dropped_slices || 0)}`, caps + refused > 0);
	item('own cost', `${(cost.own_cpu_pct || 0).toFixed(2)}% CPU, ${((mem.rss_bytes || 0) / 1048576).toFixed(1)} MiB`);
	const gpu = st.gpu || {};
	if (gpu.connections_open !== undefined)
		item('CUPTI', `${gpu.connections_open} connected`);
}

function updateSources(st) {
	const sel = $('#source'), keep = sel.value;
	while (sel.options.length > 1)
		sel.remove(1);
	for (const a of st.attachments || [])
		sel.add(new Option(`pid ${a.pid} (attached, ${a.state})`, String(a.pid)));
	if (keep && ![...sel.options].some((o) => o.value === keep))
		sel.add(new Option(`pid ${keep} (gone)`, keep));
	sel.value = keep;
}

// ---- refreshing ----

async function refresh() {
	if (S.busy || S.historyOnly)
		return;
	S.busy = true;
	try {
		const st = await (await api('/v1/status')).json();
		renderStatus(st);
		updateSources(st);
		const pid = S.source ? '&pid=' + S.source : '';
		S.timeline = await (await api('/v1/timeline?since_s=' + $('#since').value + pid)).json();
		renderStrip();
		const q = `format=folded&gpu_mode=${$('#mode').value}&weight=${$('#weight').value}${pid}`;
		const main = q + (S.range ? `&from_ms=${S.range.from}&to_ms=${S.range.to}` : `&since_s=${$('#since').value}`);
		const base = S.base && S.range ? q + `&from_ms=${S.base.from}&to_ms=${S.base.to}` : '';
		// A chosen range is fetched once; the live view every PROFILE_MS (it can be large).
		if (main + base !== S.query || (!S.range && Date.now() - S.profileAt >= PROFILE_MS)) {
			S.stacks = parseFolded(await (await api('/v1/profile?' + main)).text());
			S.baseStacks = base ? parseFolded(await (await api('/v1/profile?' + base)).text()) : null;
			S.query = main + base;
			S.profileAt = Date.now();
			updateProcesses();
			redraw();
		}
		await refreshDumps();
		$('#updated').textContent = 'updated ' + new Date().toLocaleTimeString();
		showError(null);
	} catch (e) {
		showError(e.message);
	} finally {
		S.busy = false;
	}
}

// ---- the GPU timeline (a short recording) ----

async function recordGpu() {
	const secs = Math.max(1, Math.min(60, Number($('#gpu-seconds').value) || 5));
	const btn = $('#gpu-record');
	btn.disabled = true;
	$('#gpu-state').textContent = `recording ${secs} s...`;
	try {
		const pid = S.source ? '&pid=' + S.source : '';
		const at = new Date();
		S.gpu = await (await api(`/debug/pprof/profile?seconds=${secs}&format=timeline${pid}`)).json();
		S.gpuDump = '';
		$('#gpu-title').textContent = `recording of ${secs} s from ${at.toLocaleTimeString()}` +
			(S.source ? ` (pid ${S.source})` : '');
		$('#gpu-state').textContent = gpuCounts(S.gpu);
		renderGpu();
		markOpenDump();
	} catch (e) {
		$('#gpu-state').textContent = '';
		showError(e.message);
	} finally {
		btn.disabled = false;
	}
}

function gpuCounts(tl) {
	return `${tl.work.length} GPU activities, ${tl.waits.length} waits, ${(tl.ranges || []).length} ranges over ${(tl.span_us / 1e6).toFixed(1)} s`;
}

// Busy intervals of one device (streams overlapping counted once) and the gaps between them.
function deviceFacts(items, span) {
	const iv = items.filter((w) => w[3] !== SYNC).map((w) => [w[4], w[4] + w[5]]).sort((a, b) => a[0] - b[0]);
	const merged = [];
	for (const [s, e] of iv) {
		const last = merged[merged.length - 1];
		if (last && s <= last[1])
			last[1] = Math.max(last[1], e);
		else
			merged.push([s, e]);
	}
	const gaps = [];
	let busy = 0;
	for (let i = 0; i < merged.length; i++) {
		busy += merged[i][1] - merged[i][0];
		if (i && merged[i][0] > merged[i - 1][1])
			gaps.push([merged[i - 1][1], merged[i][0]]);
	}
	return { busy, gaps, util: span ? busy / span : 0 };
}

function renderGpu() {
	const tl = S.gpu, el = $('#gpu'), sum = $('#gpu-summary');
	el.textContent = '';
	sum.textContent = '';
	$('#gpu-detail').textContent = '';
	if (!tl)
		return;
	const span = tl.span_us || 1;
	// The axis fits the GPU work and waits (a few ms of kernels in a 5 s recording stay visible).
	let a0 = Infinity, a1 = 0;
	for (const w of tl.work) {
		a0 = Math.min(a0, w[4]);
		a1 = Math.max(a1, w[4] + w[5]);
	}
	for (const w of tl.waits.concat(tl.ranges || [])) {
		a0 = Math.min(a0, w[2]);
		a1 = Math.max(a1, w[2] + w[3]);
	}
	const pad = Math.max((a1 - a0) * 0.02, 50);
	a0 = Math.max(0, a0 - pad);
	a1 = a1 + pad;
	const axis = a1 > a0 ? a1 - a0 : 1;
	const pos = (t) => (100 * (t - a0)) / axis + '%';
	const lanes = new Map(), devices = new Map();
	for (const w of tl.work) {
		const key = `GPU ${w[0]} stream ${w[1]} (pid ${w[2]})`;
		if (!lanes.has(key))
			lanes.set(key, []);
		lanes.get(key).push(['work', w]);
		if (!devices.has(w[0]))
			devices.set(w[0], []);
		devices.get(w[0]).push(w);
	}
	for (const w of tl.waits) {
		const key = `waits pid ${w[0]} tid ${w[1]}`;
		if (!lanes.has(key))
			lanes.set(key, []);
		lanes.get(key).push(['wait', w]);
	}
	const ranges = new Map();
	for (const r of tl.ranges || []) {
		const key = `ranges pid ${r[0]} tid ${r[1]}`;
		if (!ranges.has(key))
			ranges.set(key, []);
		ranges.get(key).push(r);
	}
	const what = S.gpuDump ? 'dump' : 'recording';
	if (!lanes.size && !ranges.size) {
		sum.textContent = S.gpuDump
			? 'No GPU work in this dump.'
			: 'No GPU work in this recording (is the CUDA injection library loaded? see xsprofctl record -- CMD).';
		return;
	}
	for (const [dev, items] of devices) {
		const f = deviceFacts(items, span);
		const longest = f.gaps.reduce((m, g) => Math.max(m, g[1] - g[0]), 0);
		const idle = f.gaps.reduce((m, g) => m + g[1] - g[0], 0);
		const line = document.createElement('div');
		line.className = 'gpu-facts';
		line.textContent = `GPU ${dev}: busy ${(f.busy / 1000).toFixed(1)} ms (${pct(f.busy, span)} of the ${what}); ` +
			`${f.gaps.length} idle gaps between its work, ${(idle / 1000).toFixed(1)} ms in all, longest ${(longest / 1000).toFixed(2)} ms`;
		const ax = document.createElement('div');
		ax.className = 'muted';
		ax.textContent = `axis: ${(a0 / 1000).toFixed(1)} ms to ${(a1 / 1000).toFixed(1)} ms of the ${what}`;
		sum.appendChild(line);
		line.after(ax);
		const lane = newLane(`GPU ${dev} idle`);
		for (const [s, e] of f.gaps) {
			if ((e - s) / axis < 0.001)
				continue;
			const g = document.createElement('div');
			g.className = 'gpu-gap';
			g.style.left = pos(s);
			g.style.width = (100 * (e - s)) / axis + '%';
			g.title = `idle ${((e - s) / 1000).toFixed(2)} ms`;
			lane.body.appendChild(g);
		}
		el.appendChild(lane.div);
	}
	let drawn = 0;
	// NVTX ranges and xsprof scopes, nested rows per thread (as Nsight draws them).
	for (const [key, items] of ranges) {
		const lane = newLane(key), open = [];
		let deepest = 0;
		items.sort((a, b) => a[2] - b[2] || b[3] - a[3]);
		for (const r of items) {
			while (open.length && open[open.length - 1] <= r[2])
				open.pop();
			const depth = open.length;
			open.push(r[2] + r[3]);
			deepest = Math.max(deepest, depth);
			if (drawn >= MAX_GPU_ITEMS)
				continue;
			const d = document.createElement('div');
			d.className = 'gpu-item range';
			d.style.left = pos(r[2]);
			d.style.width = (100 * Math.max(r[3], axis / 2000)) / axis + '%';
			d.style.top = depth * 16 + 1 + 'px';
			d.style.height = '14px';
			d.style.bottom = 'auto';
			d.dataset.name = tl.names[r[4]] || '';
			d.title = d.dataset.name;
			d.textContent = d.dataset.name;
			d.addEventListener('click', () => showGpuItem(d, 'range', r));
			lane.body.appendChild(d);
			drawn++;
		}
		lane.div.style.height = (deepest + 1) * 16 + 2 + 'px';
		el.appendChild(lane.div);
	}
	for (const [key, items] of lanes) {
		const lane = newLane(key);
		for (const [what, w] of items) {
			if (drawn >= MAX_GPU_ITEMS)
				break;
			const start = what === 'work' ? w[4] : w[2], dur = what === 'work' ? w[5] : w[3];
			const d = document.createElement('div');
			const kind = what === 'work' ? KIND[w[3]] || 'kernel' : 'wait';
			d.className = 'gpu-item ' + kind;
			d.style.left = pos(start);
			d.style.width = (100 * Math.max(dur, axis / 2000)) / axis + '%';
			d.dataset.name = tl.names[what === 'work' ? w[6] : w[4]] || '';
			d.title = d.dataset.name;
			d.addEventListener('click', () => showGpuItem(d, what, w));
			lane.body.appendChild(d);
			drawn++;
		}
		el.appendChild(lane.div);
	}
	const total = tl.work.length + tl.waits.length;
	if (drawn < total) {
		const more = document.createElement('div');
		more.className = 'muted';
		more.textContent = `${total - drawn} more not drawn`;
		el.appendChild(more);
	}
}

function newLane(name) {
	const div = document.createElement('div');
	div.className = 'lane';
	const label = document.createElement('div');
	label.className = 'lane-name';
	label.textContent = name;
	label.title = name;
	const body = document.createElement('div');
	body.className = 'lane-body';
	div.appendChild(label);
	div.appendChild(body);
	return { div, body };
}

function showGpuItem(div, what, w) {
	document.querySelectorAll('.gpu-item.sel').forEach((e) => e.classList.remove('sel'));
	div.classList.add('sel');
	const tl = S.gpu, out = $('#gpu-detail');
	let text;
	if (what === 'work') {
		text = `${KIND[w[3]] || 'kernel'} ${tl.names[w[6]]}\nGPU ${w[0]}, stream ${w[1]}, pid ${w[2]}: ` +
			`at ${(w[4] / 1000).toFixed(3)} ms for ${w[5]} us\n`;
		text += w[7] >= 0
			? 'launched from (innermost first):\n  ' + tl.stacks[w[7]].split(';').reverse().join('\n  ')
			: 'no launch was joined to it';
	} else if (what === 'range') {
		text = `range ${tl.names[w[4]]}: pid ${w[0]} tid ${w[1]}, at ${(w[2] / 1000).toFixed(3)} ms for ${w[3]} us`;
	} else {
		text = `${tl.names[w[4]]}: pid ${w[0]} tid ${w[1]} waited for the GPU at ${(w[2] / 1000).toFixed(3)} ms for ${w[3]} us`;
	}
	out.textContent = text;
}

// ---- the flight recorder's dumps ----

// The list, refreshed with the rest; a dump's manifest (what tripped it) is asked once, when
// it is done. A 404: the flight recorder is off.
async function refreshDumps() {
	let list = null;
	try {
		list = await (await api('/v1/dumps')).json();
	} catch (e) {
		if (e.status !== 404)
			throw e;
	}
	const names = new Set((list || []).map((d) => d.name));
	for (const name of [...S.manifests.keys()])
		if (!names.has(name))
			S.manifests.delete(name);
	const want = (list || []).filter((d) => d.state === 'done' && !S.manifests.has(d.name));
	await Promise.all(want.map(async (d) => {
		try {
			const j = await (await api('/v1/dumps/' + encodeURIComponent(d.name))).json();
			S.manifests.set(d.name, j.manifest || null);
		} catch (e) {
			S.manifests.set(d.name, null); // gone since, or unreadable: the list says
		}
	}));
	// Drawn again only when it changed (a click on a button being drawn again is lost).
	const key = JSON.stringify(list);
	if (key !== S.dumpsKey) {
		S.dumpsKey = key;
		renderDumps(list);
	}
}

function when(unixS) {
	const d = new Date(unixS * 1000), p = (n) => String(n).padStart(2, '0');
	return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
		`${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function size(bytes) {
	return bytes < 1048576 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}

// What tripped a dump, from its manifest's trigger (every string in it is the daemon's or a
// process's: it goes in as text).
function tripped(t) {
	const n = (v, d) => Number(v || 0).toFixed(d);
	let what = '';
	if (t.step)
		what = `step ${t.step.name} took ${n(t.step.seconds, 2)} s, ${n(t.step.times_median, 1)} times its median`;
	else if (t.call)
		what = `${t.call.api} waited ${n(t.call.waited_s, 0)} s (tid ${t.call.tid})`;
	else if (t.range)
		what = `range ${t.range.range} open ${n(t.range.open_s, 0)} s (tid ${t.range.tid})`;
	else if (t.gpu)
		what = `GPU ${t.gpu.device} idle ${n(t.gpu.idle_percent, 0)}% of ${n(t.gpu.over_s, 0)} s`;
	else if (t.signal_name)
		what = `killed by SIG${t.signal_name}`;
	else if (t.kind === 'manual')
		what = 'asked for' + (t.note ? ': ' + t.note : '');
	if (t.pid !== undefined)
		what = `pid ${t.pid}${t.comm ? ' (' + t.comm + ')' : ''}: ${what}`;
	return what;
}

function renderDumps(list) {
	const body = $('#dumps tbody');
	body.textContent = '';
	$('#dumps').hidden = !(list && list.length);
	$('#dumps-note').textContent = !list
		? 'the flight recorder is off (xsprofd --flight-mb 0)'
		: list.length ? '' : 'no dumps yet (xsprofctl dump asks for one; xsprofctl triggers lists what makes others)';
	for (const d of list || []) {
		const tr = document.createElement('tr');
		const m = S.manifests.get(d.name);
		let what = '';
		if (d.state === 'failed')
			what = d.error || '';
		else if (d.state === 'pending')
			what = `due in ${Math.ceil(d.due_in_s || 0)} s`;
		else if (m)
			what = tripped(m.trigger || {});
		for (const t of [when(d.created_unix_s), d.trigger, d.state, what, d.bytes !== undefined ? size(d.bytes) : '']) {
			const td = document.createElement('td');
			td.textContent = t;
			tr.appendChild(td);
		}
		const td = document.createElement('td');
		if (d.state === 'done') {
			const b = document.createElement('button');
			b.textContent = 'open';
			b.title = 'draw its GPU timeline';
			b.addEventListener('click', () => openDump(d.name));
			td.appendChild(b);
		}
		tr.appendChild(td);
		tr.title = d.name;
		tr.dataset.name = d.name;
		tr.dataset.trigger = d.trigger;
		tr.dataset.state = d.state;
		tr.className = d.state;
		body.appendChild(tr);
	}
	markOpenDump();
}

function markOpenDump() {
	for (const tr of document.querySelectorAll('#dumps tbody tr'))
		tr.classList.toggle('open', tr.dataset.name === S.gpuDump);
}

// The heading over a dump's timeline: which dump, when, what tripped it, what it holds.
function dumpTitle(d) {
	const m = d.manifest || {}, t = m.trigger || {}, span = m.span || {}, c = m.counts || {};
	const el = $('#gpu-title');
	el.textContent = '';
	const b = document.createElement('b');
	b.textContent = `dump ${d.name}: ${t.kind || ''} at ${when(t.at_unix_s || t.created_unix_s || 0)}`;
	el.appendChild(b);
	const what = tripped(t);
	if (what)
		el.appendChild(document.createTextNode(', ' + what));
	const procs = (m.processes || []).map((p) => {
		const labels = Object.entries(p.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ');
		return `${p.pid} ${p.comm || ''}` + (labels ? ` (${labels})` : '');
	});
	const more = document.createElement('div');
	more.className = 'muted';
	more.textContent = `holds ${Number(span.seconds || 0).toFixed(1)} s from ${when(span.from_unix_s || 0)}: ` +
		`${c.kernels || 0} kernels, ${c.launches || 0} launches, ${c.ranges || 0} ranges, ${c.samples || 0} CPU samples; ` +
		`processes: ${procs.slice(0, 8).join(', ') || 'none'}${procs.length > 8 ? `, and ${procs.length - 8} more` : ''}`;
	el.appendChild(more);
}

async function openDump(name) {
	const path = '/v1/dumps/' + encodeURIComponent(name);
	$('#gpu-state').textContent = `opening dump ${name}...`;
	try {
		const d = await (await api(path)).json();
		const tl = await (await api(path + '/timeline.json')).json();
		S.gpu = tl;
		S.gpuDump = name;
		dumpTitle(d);
		$('#gpu-state').textContent = gpuCounts(tl);
		renderGpu();
		markOpenDump();
		$('#gpu-title').scrollIntoView({ block: 'nearest' });
	} catch (e) {
		$('#gpu-state').textContent = '';
		showError(e.message);
	}
}

// ---- wiring ----

function init() {
	takeToken();
	brush();
	for (const id of ['#mode', '#weight', '#since', '#source']) {
		$(id).addEventListener('change', () => {
			if (id === '#source' || id === '#since')
				S.range = S.base = null;
			S.source = $('#source').value;
			S.zoom = [];
			S.query = '';
			refresh();
		});
	}
	$('#compare').addEventListener('change', () => {
		S.base = null;
		S.query = '';
		refresh();
	});
	$('#process').addEventListener('change', () => {
		S.zoom = [];
		redraw();
	});
	$('#search').addEventListener('input', () => renderFlame(buildTree()));
	$('#unzoom').addEventListener('click', () => {
		S.zoom = [];
		redraw();
	});
	$('#flame').addEventListener('click', (ev) => {
		const d = ev.target.closest('.frame');
		if (d) {
			S.zoom = d.xsPath;
			renderFlame(buildTree());
		}
	});
	$('#flame').addEventListener('mousemove', (ev) => {
		const d = ev.target.closest('.frame');
		if (!d)
			return;
		const n = d.xsNode, total = Number($('#total').dataset.value);
		let t = `${n.name}: ${fmt(n.value)} (${pct(n.value, total)})`;
		if (S.baseStacks)
			t += `, baseline ${fmt(n.base)} (${n.value >= n.base ? '+' : ''}${fmt(n.value - n.base)})`;
		$('#hover').textContent = t;
	});
	$('#gpu-record').addEventListener('click', recordGpu);
	window.addEventListener('resize', () => {
		renderStrip();
		redraw();
	});
	// The history first: without xsprofd behind the proxy, the live view asks nothing.
	historyInit().finally(() => {
		refresh();
		setInterval(() => {
			if ($('#live').checked)
				refresh();
		}, REFRESH_MS);
	});
}

// ---- the history of benchmark runs (xsprofctl ui --history STORE; absent: hidden) ----

const shortCommit = (c) => c.slice(0, 12);
const histValue = (v, unit) => unit === 'ns' ? (v / 1e6).toFixed(2) + ' ms'
	: Math.round(v).toLocaleString('en') + ' ' + unit;

// An SVG of the proxy's (its names escaped as XML), drawn in box. Its own style and script
// go (the page's policy allows neither; app.css styles it), its buttons too, and its ids,
// which could be the page's, are renamed (box.id + '-' + id) with the references to them.
async function showSvg(path, box, what) {
	box.textContent = 'loading ' + what + '...';
	try {
		const text = (await (await api(path)).text())
			.replace(/<style[\s\S]*?<\/style>/g, '').replace(/<script[\s\S]*?<\/script>/g, '');
		const svg = new DOMParser().parseFromString(text, 'image/svg+xml').documentElement;
		if (svg.nodeName !== 'svg')
			throw new Error(what + ': not an SVG');
		for (const e of svg.querySelectorAll('.btn'))
			e.remove();
		for (const e of svg.querySelectorAll('[id]')) {
			if (e.id === 'title' || e.id === 'subtitle')
				e.classList.add('svg-' + e.id);
			e.id = box.id + '-' + e.id;
		}
		for (const e of svg.querySelectorAll('[fill^="url(#"]'))
			e.setAttribute('fill', e.getAttribute('fill').replace('url(#', 'url(#' + box.id + '-'));
		box.replaceChildren(document.importNode(svg, true));
	} catch (e) {
		box.textContent = e.message;
	}
}

async function historyLoad(b) {
	const q = 'project=' + encodeURIComponent(b.project) + '&bench=' + encodeURIComponent(b.bench);
	const body = $('#hist-steps tbody');
	body.replaceChildren();
	$('#hist-trend').replaceChildren();
	$('#hist-diff').replaceChildren();
	let s;
	try {
		s = await (await api('/history/steps?' + q)).json();
	} catch (e) {
		$('#hist-note').textContent = e.message;
		return;
	}
	let steps = 0;
	for (const f of s.figures) {
		const figure = f.kind + ':' + f.name;
		for (const st of f.steps) {
			const tr = document.createElement('tr');
			const cells = [f.kind + ' ' + f.name, shortCommit(st.commit),
				(st.effect >= 0 ? '+' : '') + (100 * st.effect).toFixed(1) + '%',
				histValue(st.before_median, f.unit) + ' \u2192 ' + histValue(st.after_median, f.unit)];
			for (const c of cells) {
				const td = document.createElement('td');
				td.textContent = c;
				tr.appendChild(td);
			}
			const td = document.createElement('td');
			const trend = document.createElement('button');
			trend.textContent = 'trend';
			trend.addEventListener('click', () => showSvg('/history/trend.svg?' + q +
				'&figure=' + encodeURIComponent(figure), $('#hist-trend'), 'the trend'));
			const diff = document.createElement('button');
			diff.textContent = 'differential flamegraph';
			diff.className = 'hist-diff';
			diff.addEventListener('click', () => {
				for (const o of body.querySelectorAll('tr.open'))
					o.classList.remove('open');
				tr.classList.add('open');
				showSvg('/history/diff.svg?' + q + '&before=' + st.before + '&after=' + st.commit,
					$('#hist-diff'), 'the differential flamegraph');
			});
			td.append(trend, ' ', diff);
			tr.appendChild(td);
			body.appendChild(tr);
			steps++;
		}
	}
	$('#hist-note').textContent = `${steps} steps in ${s.looked_at} figures looked at ` +
		`(each held to p < ${s.alpha.toPrecision(2)})`;
}

async function historyInit() {
	let j;
	try {
		j = await (await api('/history/benches')).json();
	} catch (e) {
		return; // no history served here: the panel stays hidden
	}
	$('#history').hidden = false;
	if (j.live === false) {
		// No xsprofd behind the proxy: only the history answers.
		S.historyOnly = true;
		for (const e of document.querySelectorAll('header label, #status-bar, .panel:not(#history)'))
			e.hidden = true;
		$('#updated').textContent = 'the history only: no xsprofd behind this address';
		showError('');
	}
	const sel = $('#hist-bench');
	j.benches.forEach((b, i) => {
		const o = document.createElement('option');
		o.value = String(i);
		o.textContent = `${b.project}/${b.bench} (${b.runs} runs)`;
		sel.appendChild(o);
	});
	if (!j.benches.length) {
		$('#hist-note').textContent = 'the store holds no runs yet (xsprof-history record)';
		return;
	}
	sel.addEventListener('change', () => historyLoad(j.benches[Number(sel.value)]));
	historyLoad(j.benches[0]);
}

init();
