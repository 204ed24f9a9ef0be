// The row value s at one position{{#if hasResidual}}: x + r, rounded to the residual type and stored{{/if}}.
fn first_{{sfx}}(rx: u32{{#if hasResidual}}, rr: u32, rro: u32{{/if}}, i: u32{{cparam}}) -> {{F}} {
{{#if hasResidual}}
  let s = {{#if (eq sfx "v")}}RV{{else}}{{types.residual}}{{/if}}({{F}}(x[rx + i]{{at}}) + {{F}}(residual[rr + i]{{at}}));
  residual_out[rro + i]{{at}} = s;
  return {{F}}(s);
{{else}}
  return {{F}}(x[rx + i]{{at}});
{{/if}}
}

// s again, read back from {{#if hasResidual}}the stored sum{{else}}x{{/if}}.
fn again_{{sfx}}(base: u32, i: u32{{cparam}}) -> {{F}} {
  return {{F}}({{#if hasResidual}}residual_out{{else}}x{{/if}}[base + i]{{at}});
}

// y at one position from the row value s.
fn store_{{sfx}}(s: {{F}}, ry: u32, i: u32, mean: f32, rstd: f32{{cparam}}) {
  var v = (s - {{F}}(mean)) * rstd;
{{#if hasWeight}}
  v *= {{#if features.weightOffset}}1.0 + {{/if}}{{F}}(weight[i]{{at}});
{{/if}}
{{#if features.bias}}
  v += {{F}}(bias[i]{{at}});
{{/if}}
  y[ry + i]{{at}} = {{#if (eq sfx "v")}}XV{{else}}{{types.x}}{{/if}}(v);
}
