{{#if cached}}
for (var j = 0u; j < ITEMS; j++) {
  let i = lane + j * TPR;
  if (i >= nvec) { break; }
{{else}}
for (var i = lane; i < nvec; i += TPR) {
{{/if}}
