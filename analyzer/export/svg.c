#include "export/svg.h"

#include <string.h>

#include "export/flame.h"

void churn_window_label(const churn_analysis *a, char *buf, size_t len)
{
    snprintf(buf, len, "epochs %llu..%llu",
             (unsigned long long)(a->window.has_first ? a->window.first : a->first_epoch),
             (unsigned long long)(a->window.has_last ? a->window.last : a->last_epoch));
}

void churn_export_svg(FILE *out, const churn_tree *t, const churn_svg_view *v)
{
    char title[256], subtitle[640], now[64], then[64];
    churn_window_label(v->a, now, sizeof now);
    const char *titles[2] = {v->metric->title, v->metric->title};
    const char *units[2] = {v->metric->unit, v->metric->unit};
    if (v->base) {
        churn_window_label(v->base, then, sizeof then);
        snprintf(title, sizeof title, "Differential flame graph: %s", v->metric->name);
        snprintf(subtitle, sizeof subtitle,
                 "%s, %s against %s (red grew, blue shrank; width: the larger of the two)",
                 v->metric->title, now, then);
    } else {
        snprintf(title, sizeof title, "Flame graph: %s", v->metric->name);
        snprintf(subtitle, sizeof subtitle, "%s, %s, pid %llu (colour: module)",
                 v->metric->title, now, (unsigned long long)v->a->info->pid);
    }
    char note[256];
    if (churn_analysis_estimate_note(v->a, note, sizeof note)) {
        size_t at = strlen(subtitle);
        snprintf(subtitle + at, sizeof subtitle - at, "; %s", note);
    }
    churn_flame_desc d = {title, subtitle, titles, units, 0, v->base ? 1 : -1};
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" "
          "height=\"200\" font-family=\"Verdana, sans-serif\">\n"
          "<style>.cf-frame:hover rect { stroke: #222; stroke-width: 0.6 }"
          " text { pointer-events: none }"
          " .cf-reset { pointer-events: auto } .cf-details, .cf-matched { font-size: 12px }"
          "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n",
          out);
    churn_flame_script(out);
    fputs("churnFlame(document.documentElement, ", out);
    churn_flame_data(out, t, &d);
    fputs(");\n]]></script>\n</svg>\n", out);
}
