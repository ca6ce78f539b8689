/* test_support.c - temporary directories and file helpers for tests. */
#define _XOPEN_SOURCE 700
#include "test_support.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

char *ts_tmpdir(void)
{
    char tmpl[] = "/tmp/gcdp-test-XXXXXX";
    char *p = mkdtemp(tmpl);
    if (!p) {
        perror("mkdtemp");
        abort();
    }
    return strdup(p);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void ts_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void ts_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

char *ts_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

void ts_window2(char *buf, size_t n, const char *device, const char *id, long long start,
                long long end, size_t k, const char *const *chan, const double *val, int n_real,
                int n_slots, long long period_ms)
{
    json_t *w = json_object(), *nodes = json_object(), *nn = json_object(), *imp = json_object();
    json_t *pn = json_object();
    char key[96], *txt;

    for (size_t i = 0; i < k; i++) {
        snprintf(key, sizeof(key), "%s.mean", chan[i]);
        json_object_set_new(nodes, key, json_real(val[i]));
        json_object_set_new(nn, key, json_integer(n_real));
        json_object_set_new(imp, key, json_array());
        json_object_set_new(pn, key,
                            json_pack("{s:s,s:s,s:[i,i],s:i,s:i}", "stat", "mean", "channel",
                                      chan[i], "clip", 0, 1, "n_imputed", 0, "max_run", 0));
    }
    json_object_set_new(w, "schema", json_string("gcdp.window/2"));
    json_object_set_new(w, "id", json_string(id));
    json_object_set_new(w, "device", json_string(device));
    json_object_set_new(w, "window_start", json_integer(start));
    json_object_set_new(w, "window_end", json_integer(end));
    json_object_set_new(w, "n", json_integer(n_real));
    if (n_slots > 0)
        json_object_set_new(w, "n_slots", json_integer(n_slots));
    json_object_set_new(w, "excluded", json_false());
    json_object_set_new(w, "nodes", nodes);
    json_object_set_new(w, "n_node", nn);
    json_object_set_new(w, "imputed", imp);
    json_object_set_new(w, "prov",
                        json_pack("{s:i,s:I,s:s,s:o}", "interp_gap", 2, "period_ms",
                                  (json_int_t)period_ms, "norm", "clip_minmax", "nodes", pn));
    txt = json_dumps(w, JSON_COMPACT | JSON_REAL_PRECISION(17));
    cr_assert(txt && strlen(txt) < n, "ts_window2: buffer too small");
    snprintf(buf, n, "%s", txt);
    free(txt);
    json_decref(w);
}
