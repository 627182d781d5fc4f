// SPDX-License-Identifier: Apache-2.0
// tuning.js: placeholder for the Tuning page (the tune helper's file replaces it): app.js
// loads it lazily and calls showTuning(root, {api, project, jobId, job, go}).
export async function showTuning(root) {
  const p = document.createElement('p');
  p.className = 'msg msg-note';
  p.textContent = 'Tuning page not built yet.';
  root.replaceChildren(p);
}
