{{#if subgroup}}
// The sum over one row's TPR invocations: subgroupAdd, then the row's subgroup
// partials through workgroup memory. TPR is a multiple of the subgroup size, and
// subgroups are taken to be runs of consecutive invocations (verification checks).
fn row_sum(v: f32, lid: u32, sg_size: u32, sg_lane: u32) -> f32 {
  let s = subgroupAdd(v);
  if (sg_lane == 0u) { red[lid / sg_size] = s; }
  workgroupBarrier();
  let per_row = TPR / sg_size;
  let first = (lid / TPR) * per_row;
  var total = 0.0;
  for (var k = 0u; k < per_row; k++) { total += red[first + k]; }
  workgroupBarrier();
  return total;
}
{{else}}
// The sum over one row's TPR invocations: a tree in workgroup memory.
fn row_sum(v: f32, lid: u32) -> f32 {
  let lane = lid % TPR;
  red[lid] = v;
  workgroupBarrier();
  for (var s = TPR / 2u; s > 0u; s /= 2u) {
    if (lane < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let total = red[lid - lane];
  workgroupBarrier();
  return total;
}
{{/if}}
