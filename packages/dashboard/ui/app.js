// The kq dashboard's page: every URL it fetches is relative to the page's base (which the server sets), so it works
// under a URL prefix. Its pages have Flower's paths (workers, worker/<name>, tasks, task/<id>, broker) and move between
// them without a reload (history API); it draws from the dashboard's JSON (its overview and Flower's API), and
// redraws when the server-sent `/api/live` feed says something changed. Plain browser JavaScript: nothing to build.
(() => {
  'use strict';
  const view = document.getElementById('view');
  const STATES = ['All', 'PENDING', 'RECEIVED', 'STARTED', 'SUCCESS', 'FAILURE', 'RETRY', 'REVOKED', 'REJECTED'];
  const PAGE = 50;
  const taskFilters = { state: 'All', taskname: '', workername: 'All', search: '', offset: 0 };
  let charts = [];
  const resentAs = {}; // task id → the ids it was sent again as, from this page
  let deadLetterQueue = ''; // the RabbitMQ dead-letter queue typed on the Dead letters page
  let drawing = false;
  let pending = false;

  // The server's <base> is relative to the path it served (`../` under worker/<name>): fixed here as absolute, since the
  // page's path changes as it moves between pages without a reload.
  const base = new URL(document.baseURI);
  const baseElement = document.querySelector('base');
  if (baseElement) baseElement.href = base.href;
  /** A time axis' tick steps, seconds. */
  const TIME_STEPS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const PAGES = new Set(['', 'workers', 'worker', 'tasks', 'task', 'queues', 'broker', 'dead-letters']);

  const esc = (value) => String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const time = (seconds) => (seconds ? new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 23) : '');
  const pad = (n) => String(n).padStart(2, '0');
  /** A chart's time: local hh:mm, with seconds when the ticks are closer than a minute. */
  const clock = (seconds, withSeconds = true) => {
    const at = new Date(seconds * 1000);
    return `${pad(at.getHours())}:${pad(at.getMinutes())}${withSeconds ? `:${pad(at.getSeconds())}` : ''}`;
  };
  /** A duration as people read it, three significant digits: 109 µs, 12.3 ms, 1.52 s, 2 min 5 s. */
  const duration = (seconds) => {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return '';
    if (seconds === 0) return '0 s';
    const digits = (n) => String(Number(n.toPrecision(3)));
    const size = Math.abs(seconds);
    // Thresholds just below each unit, so rounding never shows 1000 µs or 1000 ms.
    if (size < 0.0009995) return `${digits(seconds * 1e6)} µs`;
    if (size < 0.9995) return `${digits(seconds * 1e3)} ms`;
    if (size < 59.95) return `${digits(seconds)} s`;
    const whole = Math.round(seconds);
    return `${Math.floor(whole / 60)} min ${whole % 60} s`;
  };
  const ago = (seconds) => (seconds === null || seconds === undefined ? '—' : seconds < 1 ? 'now' : `${seconds.toFixed(0)} s ago`);
  const fetchJson = async (url, options) => {
    const response = await fetch(url, options);
    const body = await response.text();
    let data;
    try {
      data = JSON.parse(body);
    } catch {
      data = { message: body };
    }
    if (!response.ok) throw new Error(data.error || data.message || `${response.status}`);
    return data;
  };
  const toast = (text) => {
    const node = document.createElement('div');
    node.className = 'toast';
    node.textContent = text;
    document.body.appendChild(node);
    setTimeout(() => node.remove(), 3000);
  };
  const post = async (url, fields = {}) => {
    try {
      const data = await fetchJson(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      toast(data.message || 'done');
    } catch (error) {
      toast(`failed: ${error.message}`);
    }
    redraw();
  };

  /** The page and its argument from the path below the base: `worker/celery%40host` → worker, celery@host. */
  function route() {
    const path = location.pathname.startsWith(base.pathname) ? location.pathname.slice(base.pathname.length) : '';
    const [page, ...rest] = path.split('/');
    return { page: page || 'workers', arg: decodeURIComponent(rest.join('/')) };
  }

  /** `#/worker/x` (the page's URLs before it had paths, in old bookmarks) → `worker/x`. */
  function fromHash() {
    if (!location.hash.startsWith('#/')) return false;
    window.history.replaceState(null, '', new URL(location.hash.slice(2), base));
    return true;
  }

  /**
   * A time chart. The x axis has one line of hh:mm(:ss) per tick, ticks at least `space` pixels apart so that labels
   * never overlap (uPlot's default adds a second line with the date under the first tick, wider than the spacing);
   * its steps add 2 minutes to uPlot's, so that a narrow chart of 5 minutes still has a few ticks.
   * `y`, when given, formats the y axis and the legend (uPlot's own numbers otherwise).
   */
  function chart(target, title, series, data, y) {
    const width = Math.max(320, target.clientWidth - 24);
    const legend = (_u, value) => (value === null || value === undefined ? '--' : y(value));
    const opts = {
      title,
      width,
      height: 200,
      scales: { x: { time: true } },
      series: [{ value: (_u, t) => (t === null || t === undefined ? '--' : clock(t)) }, ...series.map((s) => (y ? { value: legend, ...s } : s))],
      axes: [
        { space: 80, incrs: TIME_STEPS, values: (_u, splits, _axis, _space, incr) => splits.map((t) => clock(t, incr < 60)) },
        y ? { size: 70, values: (_u, splits) => splits.map(y) } : { size: 60 },
      ],
    };
    charts.push(new uPlot(opts, data, target));
  }

  async function workersPage() {
    const data = await fetchJson('dashboard/overview');
    const rows = data.workers
      .map((w) => `<tr data-worker="${esc(w.hostname)}">
        <td><a href="worker/${encodeURIComponent(w.hostname)}">${esc(w.hostname)}</a></td>
        <td class="${w.online ? 'online' : 'offline'}">${w.online ? 'online' : 'offline'}</td>
        <td>${ago(w.heartbeatAge)}</td>
        <td>${esc(w.pool ? `${w.pool.implementation ?? ''} ${w.pool.size ?? ''}${w.pool.autoscale ? ` (autoscale ${w.pool.autoscale.min}–${w.pool.autoscale.max})` : ''}` : '—')}</td>
        <td>${w.active ?? '—'}</td><td>${w.processed}</td><td>${w.failed}</td><td>${w.retried}</td>
        <td>${esc(w.load ? w.load.map((n) => n.toFixed(2)).join(' ') : '—')}</td>
        <td>${esc(w.queues.join(', '))}</td><td class="muted">${esc(w.software ?? '')}</td></tr>`)
      .join('');
    view.innerHTML = `<h1>Workers</h1>
      <div class="cards"><div class="card" id="chart-throughput"></div><div class="card" id="chart-runtime"></div></div>
      <table id="workers"><thead><tr><th>Worker</th><th>Status</th><th>Heartbeat</th><th>Pool</th><th>Active</th><th>Processed</th><th>Failed</th><th>Retried</th><th>Load</th><th>Queues</th><th>Software</th></tr></thead>
      <tbody>${rows || '<tr><td colspan="11" class="muted">No worker seen yet: workers appear when they send events (kq worker -E, celery worker -E).</td></tr>'}</tbody></table>
      <p class="muted">${data.tasks.total} tasks, ${data.events} events seen.</p>`;
    const t = data.throughput.map((p) => p.t);
    chart(document.getElementById('chart-throughput'), 'Tasks per second', [{ label: 'succeeded', stroke: '#2b8a3e' }, { label: 'failed', stroke: '#c92a2a' }], [t, data.throughput.map((p) => p.succeeded), data.throughput.map((p) => p.failed)]);
    // Seconds with no finished task have no runtime: points stay visible where a line has no neighbour.
    const dots = { show: true, size: 4 };
    chart(document.getElementById('chart-runtime'), 'Runtime', [{ label: 'p50', stroke: '#3b5bdb', points: dots }, { label: 'p95', stroke: '#e67700', points: dots }, { label: 'p99', stroke: '#c92a2a', points: dots }], [t, data.throughput.map((p) => p.p50), data.throughput.map((p) => p.p95), data.throughput.map((p) => p.p99)], duration);
  }

  async function workerPage(name) {
    const data = await fetchJson(`api/workers?workername=${encodeURIComponent(name)}`).catch(() => ({ [name]: {} }));
    const info = data[name] || {};
    const list = (items, render) => (Array.isArray(items) && items.length ? `<table><tbody>${items.map(render).join('')}</tbody></table>` : '<p class="muted">none</p>');
    const taskRow = (t) => `<tr><td><a href="task/${encodeURIComponent(t.id)}">${esc(t.id)}</a></td><td>${esc(t.name)}</td><td class="mono">${esc(t.args)}</td><td class="mono">${esc(t.kwargs)}</td></tr>`;
    const enc = encodeURIComponent(name);
    view.innerHTML = `<h1>${esc(name)}</h1>
      <div class="actions">
        <button class="danger" data-act="shutdown">Shut down</button>
        <button class="secondary" data-act="restart">Restart pool</button>
        <form data-act="grow"><input name="n" value="1" size="3"><button class="secondary">Grow pool</button></form>
        <form data-act="shrink"><input name="n" value="1" size="3"><button class="secondary">Shrink pool</button></form>
        <form data-act="autoscale"><input name="max" placeholder="max" size="4"><input name="min" placeholder="min" size="4"><button class="secondary">Autoscale</button></form>
        <form data-act="add-consumer"><input name="queue" placeholder="queue"><button class="secondary">Add consumer</button></form>
        <form data-act="cancel-consumer"><input name="queue" placeholder="queue"><button class="secondary">Cancel consumer</button></form>
        <form data-act="rate-limit"><input name="task" placeholder="task name"><input name="ratelimit" placeholder="10/s" size="6"><button class="secondary">Rate limit</button></form>
        <form data-act="timeout"><input name="task" placeholder="task name"><input name="soft" placeholder="soft s" size="5"><input name="hard" placeholder="hard s" size="5"><button class="secondary">Time limits</button></form>
      </div>
      <h2>Active</h2>${list(info.active, taskRow)}
      <h2>Reserved</h2>${list(info.reserved, taskRow)}
      <h2>Scheduled (ETA)</h2>${list(info.scheduled, (s) => `<tr><td>${esc(s.eta)}</td>${taskRow(s.request || {}).replace(/^<tr>|<\/tr>$/g, '')}</tr>`)}
      <h2>Queues</h2>${list(info.active_queues, (q) => `<tr><td>${esc(q.name)}</td><td class="muted">${esc(q.exchange && q.exchange.name)}</td><td class="muted">${esc(q.routing_key)}</td></tr>`)}
      <h2>Registered tasks</h2>${list(info.registered, (t) => `<tr><td>${esc(t)}</td></tr>`)}
      <h2>Revoked</h2>${list(info.revoked, (t) => `<tr><td class="mono">${esc(t)}</td></tr>`)}
      <h2>Stats</h2><pre>${esc(JSON.stringify(info.stats ?? {}, null, 2))}</pre>
      <h2>Configuration</h2><pre>${esc(JSON.stringify(info.conf ?? {}, null, 2))}</pre>`;
    view.querySelector('[data-act="shutdown"]').onclick = () => confirm(`Shut down ${name}?`) && post(`api/worker/shutdown/${enc}`);
    view.querySelector('[data-act="restart"]').onclick = () => post(`api/worker/pool/restart/${enc}`);
    for (const form of view.querySelectorAll('form[data-act]')) {
      form.onsubmit = (event) => {
        event.preventDefault();
        const fields = Object.fromEntries(new FormData(form));
        const act = form.dataset.act;
        if (act === 'grow' || act === 'shrink' || act === 'autoscale') return post(`api/worker/pool/${act}/${enc}`, fields);
        if (act === 'add-consumer' || act === 'cancel-consumer') return post(`api/worker/queue/${act}/${enc}`, fields);
        const task = encodeURIComponent(fields.task || '');
        delete fields.task;
        return post(`api/task/${act}/${task}`, { ...fields, workername: name });
      };
    }
  }

  async function tasksPage() {
    const [overview] = await Promise.all([fetchJson('dashboard/overview')]);
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(taskFilters.offset), sort_by: '-received' });
    for (const key of ['state', 'taskname', 'workername', 'search']) if (taskFilters[key] && taskFilters[key] !== 'All') query.set(key, taskFilters[key]);
    const tasks = Object.values(await fetchJson(`api/tasks?${query}`));
    const workers = ['All', ...overview.workers.map((w) => w.hostname)];
    const options = (values, selected) => values.map((v) => `<option${v === selected ? ' selected' : ''}>${esc(v)}</option>`).join('');
    const rows = tasks
      .map((t) => `<tr><td><a href="task/${encodeURIComponent(t.uuid)}">${esc(t.name ?? '?')}</a><div class="mono muted">${esc(t.uuid)}</div></td>
        <td class="state ${esc(t.state)}">${esc(t.state)}</td><td class="mono">${esc(t.args)}</td><td class="mono">${esc(t.kwargs)}</td>
        <td class="mono">${esc(t.result ?? t.exception ?? '')}</td><td>${time(t.received)}</td><td class="runtime">${duration(t.runtime)}</td><td>${esc(t.worker ?? '')}</td></tr>`)
      .join('');
    const focused = document.activeElement && document.activeElement.name;
    view.innerHTML = `<h1>Tasks</h1>
      <form class="filters" id="filters">
        <select name="state">${options(STATES, taskFilters.state)}</select>
        <input name="taskname" placeholder="task name" value="${esc(taskFilters.taskname)}" list="task-types">
        <datalist id="task-types">${overview.tasks.types.map((n) => `<option>${esc(n)}</option>`).join('')}</datalist>
        <select name="workername">${options(workers, taskFilters.workername)}</select>
        <input name="search" placeholder="search (args:…, result:…)" value="${esc(taskFilters.search)}" size="30">
        <button>Filter</button>
      </form>
      <table id="tasks"><thead><tr><th>Task</th><th>State</th><th>Args</th><th>Kwargs</th><th>Result</th><th>Received</th><th>Runtime</th><th>Worker</th></tr></thead>
      <tbody>${rows || '<tr><td colspan="8" class="muted">No task matches.</td></tr>'}</tbody></table>
      <div class="pager"><button class="secondary" id="prev" ${taskFilters.offset === 0 ? 'disabled' : ''}>Previous</button>
      <span class="muted">${taskFilters.offset + 1}–${taskFilters.offset + tasks.length}</span>
      <button class="secondary" id="next" ${tasks.length < PAGE ? 'disabled' : ''}>Next</button></div>`;
    const form = document.getElementById('filters');
    if (focused && form.elements[focused]) form.elements[focused].focus();
    form.onsubmit = (event) => {
      event.preventDefault();
      Object.assign(taskFilters, Object.fromEntries(new FormData(form)), { offset: 0 });
      redraw();
    };
    document.getElementById('prev').onclick = () => ((taskFilters.offset = Math.max(0, taskFilters.offset - PAGE)), redraw());
    document.getElementById('next').onclick = () => ((taskFilters.offset += PAGE), redraw());
  }

  async function taskPage(id) {
    let task;
    try {
      task = await fetchJson(`api/task/info/${encodeURIComponent(id)}`);
    } catch {
      view.innerHTML = `<h1>Task ${esc(id)}</h1><p class="muted">No event about this task has been seen.</p>`;
      return;
    }
    const resend = await fetchJson(`dashboard/task/${encodeURIComponent(id)}/resend`).catch((error) => ({ resendable: false, reason: error.message }));
    const link = (value) => (value ? `<a href="task/${encodeURIComponent(value)}">${esc(value)}</a>` : '—');
    const fields = ['name', 'state', 'worker', 'args', 'kwargs', 'result', 'exception', 'retries', 'runtime', 'eta', 'expires', 'routing_key', 'client'];
    const timeline = ['sent', 'received', 'started', 'retried', 'succeeded', 'failed', 'revoked', 'rejected']
      .filter((k) => task[k])
      .map((k) => [k, task[k]])
      .sort((a, b) => a[1] - b[1]);
    view.innerHTML = `<h1>${esc(task.name ?? 'Task')} <span class="state ${esc(task.state)}">${esc(task.state)}</span></h1>
      <div class="actions"><button class="secondary" id="revoke">Revoke</button><button class="danger" id="terminate">Terminate</button>
        <form id="resend-form"><input name="queue" placeholder="queue" size="14" value="${esc(resend.queue ?? '')}" ${resend.resendable || resend.needs_queue ? '' : 'disabled'}>
        <button class="secondary" id="resend" ${resend.resendable || resend.needs_queue ? '' : `disabled title="${esc(resend.reason)}"`}>Send again</button></form>
        ${resend.resendable ? '' : `<span class="muted" id="resend-reason">${esc(resend.reason)}</span>`}<span id="resent">${(resentAs[id] || []).map((newId) => `sent again as ${link(newId)}`).join(', ')}</span></div>
      <dl><dt>id</dt><dd class="mono">${esc(task.uuid)}</dd>
      ${fields.map((k) => `<dt>${k}</dt><dd class="${k === 'args' || k === 'kwargs' || k === 'result' ? 'mono' : ''}">${esc(k === 'runtime' && task[k] !== null ? duration(task[k]) : task[k] ?? '—')}</dd>`).join('')}
      <dt>parent</dt><dd>${link(task.parent_id)}</dd><dt>root</dt><dd>${link(task.root_id)}</dd>
      <dt>children</dt><dd>${task.children.length ? task.children.map(link).join('<br>') : '—'}</dd></dl>
      ${task.traceback ? `<h2>Traceback</h2><pre>${esc(task.traceback)}</pre>` : ''}
      <h2>Timeline</h2><table><tbody>${timeline.map(([k, t]) => `<tr><td>${time(t)}</td><td>${k}</td></tr>`).join('')}</tbody></table>`;
    document.getElementById('revoke').onclick = () => post(`api/task/revoke/${encodeURIComponent(id)}`);
    document.getElementById('terminate').onclick = () => confirm('Terminate the running task?') && post(`api/task/revoke/${encodeURIComponent(id)}`, { terminate: 'true' });
    // The new task's link stays on the page (redraws keep it): its events arrive after the toast is gone.
    document.getElementById('resend-form').onsubmit = async (event) => {
      event.preventDefault();
      try {
        const body = new URLSearchParams(new FormData(event.target)).toString();
        const data = await fetchJson(`dashboard/task/${encodeURIComponent(id)}/resend`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
        (resentAs[id] = resentAs[id] || []).push(data['task-id']);
        toast(data.message);
        redraw();
      } catch (error) {
        toast(`failed: ${error.message}`);
      }
    };
  }

  async function queuesPage() {
    await fetchJson('api/queues/length'); // a fresh sample of every queue's length
    const data = await fetchJson('dashboard/overview');
    view.innerHTML = `<h1>Queues</h1><div class="card" id="chart-queues"></div>
      <table id="queues"><thead><tr><th>Queue</th><th>Messages waiting</th><th>By priority step</th><th>Consumed by</th><th>ETA tasks held by workers</th><th>Delayed in the broker</th></tr></thead><tbody>
      ${data.queues.rows.map((q) => `<tr data-queue="${esc(q.name)}"><td>${esc(q.name)}</td><td>${q.messages ?? '—'}</td><td class="muted">${q.steps ? q.steps.filter((s) => s.messageCount > 0).map((s) => `${s.step}: ${s.messageCount}`).join(', ') || '—' : '—'}</td><td>${q.consumers.map((w) => `<a href="worker/${encodeURIComponent(w)}">${esc(w)}</a>`).join(', ') || '<span class="muted">nobody</span>'}</td><td>${q.scheduled}</td><td>${q.delayed ?? '<span class="muted">—</span>'}</td></tr>`).join('') || '<tr><td colspan="6" class="muted">No queue known yet: queues are those the workers consume.</td></tr>'}
      </tbody></table>
      <p class="muted" id="delayed-total">${data.queues.delayed ? `${data.queues.delayed.total} ETA/countdown message(s) held by the broker${data.queues.delayed.byQueue ? '' : ' (its delay ladder, every queue of the vhost together: it cannot tell them apart without consuming them)'}.` : 'This broker does not say how many delayed messages it holds.'}</p>`;
    const beats = data.beats
      .flatMap((b) => b.entries.map((e) => `<tr data-entry="${esc(`${b.group}/${e.name}`)}"><td>${esc(b.group)}</td><td>${esc(e.name)}</td><td>${esc(e.task)}</td><td>${esc(e.schedule)}${e.enabled ? '' : ' <span class="muted">(disabled)</span>'}</td><td>${time(e.last_run)}</td><td>${time(e.next_run)}</td><td class="muted">${esc(b.hostname)} (epoch ${b.epoch})</td></tr>`))
      .join('');
    view.insertAdjacentHTML('beforeend', `<h2>Periodic tasks (beat)</h2><table id="beats"><thead><tr><th>Group</th><th>Entry</th><th>Task</th><th>Schedule</th><th>Last run</th><th>Next run</th><th>Leader</th></tr></thead><tbody>${beats || '<tr><td colspan="7" class="muted">No beat has announced a schedule (kq beat and kq worker -B do).</td></tr>'}</tbody></table>`);
    const samples = data.queues.samples;
    if (samples.length > 1 && data.queues.names.length) {
      const palette = ['#3b5bdb', '#2b8a3e', '#e67700', '#c92a2a', '#862e9c', '#0b7285'];
      chart(document.getElementById('chart-queues'), 'Messages waiting', data.queues.names.map((name, i) => ({ label: name, stroke: palette[i % palette.length] })), [samples.map((s) => s.t), ...data.queues.names.map((name) => samples.map((s) => s.lengths[name] ?? null))]);
    }
  }

  async function deadLettersPage() {
    // RabbitMQ keeps rejected messages in dead-letter queues it cannot list: the one typed here, else the dashboard's --dead-letter-queue.
    const form = `<form class="filters" id="dlq-form"><input name="queue" placeholder="dead-letter queue (RabbitMQ)" value="${esc(deadLetterQueue)}" size="30"><button class="secondary">Read</button></form>`;
    const scope = deadLetterQueue ? { queue: deadLetterQueue } : {};
    let letters;
    try {
      letters = await fetchJson(`dashboard/dead-letters?${new URLSearchParams({ limit: '200', ...scope })}`);
    } catch (error) {
      view.innerHTML = `<h1>Dead letters</h1>${form}<p class="muted" id="dlq-error">${esc(error.message)}</p>`;
      bindDeadLetterForm();
      return;
    }
    view.innerHTML = `<h1>Dead letters</h1>
      <p class="muted">Messages the workers rejected (undecodable, not allowed, unknown task, rejected by the task) that the broker keeps.</p>
      ${form}
      <div class="actions"><button class="secondary" id="requeue-all" ${letters.length ? '' : 'disabled'}>Send all back</button>
      <button class="danger" id="purge-all" ${letters.length ? '' : 'disabled'}>Purge all</button></div>
      <table id="dead-letters"><thead><tr><th>Rejected</th><th>Queue</th><th>Task</th><th>Reason</th><th></th></tr></thead><tbody>
      ${letters.map((l) => `<tr data-letter="${esc(l.id)}"><td>${time(l.at)}</td><td>${esc(l.queue)}${l.dead_letter_queue ? `<div class="muted">kept in ${esc(l.dead_letter_queue)}</div>` : ''}</td><td>${esc(l.task ?? l.content_type)}<div class="mono muted">${esc(l.task_id ?? '')}</div></td><td>${esc(l.reason)}</td><td><button class="secondary" data-requeue="${esc(l.id)}" data-kept="${esc(l.dead_letter_queue ?? '')}">Send back</button></td></tr>`).join('') || '<tr><td colspan="5" class="muted">No rejected message is kept.</td></tr>'}
      </tbody></table>`;
    bindDeadLetterForm();
    document.getElementById('requeue-all').onclick = () => post('dashboard/dead-letters/requeue', scope);
    document.getElementById('purge-all').onclick = () => confirm('Delete every rejected message for good?') && post('dashboard/dead-letters/purge', scope);
    for (const button of view.querySelectorAll('[data-requeue]')) button.onclick = () => post('dashboard/dead-letters/requeue', { ids: button.dataset.requeue, ...(button.dataset.kept ? { queue: button.dataset.kept } : {}) });
  }

  function bindDeadLetterForm() {
    document.getElementById('dlq-form').onsubmit = (event) => {
      event.preventDefault();
      deadLetterQueue = String(new FormData(event.target).get('queue') || '').trim();
      redraw();
    };
  }

  async function redraw() {
    if (drawing) {
      pending = true;
      return;
    }
    drawing = true;
    try {
      for (const c of charts) c.destroy();
      charts = [];
      const { page, arg } = route();
      for (const link of document.querySelectorAll('[data-nav]')) {
        const nav = link.dataset.nav;
        link.classList.toggle('active', nav === page || nav.replace(/s$/, '') === page || (nav === 'queues' && page === 'broker'));
      }
      if (page === 'worker') await workerPage(arg);
      else if (page === 'tasks') await tasksPage();
      else if (page === 'task') await taskPage(arg);
      else if (page === 'queues' || page === 'broker') await queuesPage(); // Flower's broker page lists the queues
      else if (page === 'dead-letters') await deadLettersPage();
      else await workersPage();
    } catch (error) {
      view.innerHTML = `<p class="offline">Could not load: ${esc(error.message)}</p>`;
    } finally {
      drawing = false;
      if (pending) {
        pending = false;
        redraw();
      }
    }
  }

  // Links to the page's own pages move without a reload; a new tab, another site or the API behave as links do.
  document.addEventListener('click', (event) => {
    const link = event.target.closest && event.target.closest('a[href]');
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || link.target) return;
    const url = new URL(link.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(base.pathname)) return;
    if (!PAGES.has(url.pathname.slice(base.pathname.length).split('/')[0])) return;
    event.preventDefault();
    if (url.href !== location.href) window.history.pushState(null, '', url);
    redraw();
  });
  window.addEventListener('popstate', redraw);
  window.addEventListener('hashchange', () => fromHash() && redraw());
  fromHash();
  const live = document.getElementById('live');
  const feed = new EventSource('api/live');
  feed.addEventListener('change', () => {
    // A form being typed in is left alone (a redraw would reset it): the page catches up at the next change.
    const typing = document.activeElement && ['INPUT', 'SELECT'].includes(document.activeElement.tagName);
    if (!typing) redraw();
  });
  feed.onopen = () => live.classList.add('on');
  feed.onerror = () => live.classList.remove('on');
  redraw();
})();
