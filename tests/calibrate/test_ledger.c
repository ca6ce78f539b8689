/* test_ledger.c - a private calibration charged to the privacy ledger (cal/ledger.h):
 * row timestamps, the units '<device>|<slot>', charge before noise, cap refusal, replay
 * without a second charge, several ledger rows for many units, crashes (fork + SIGKILL)
 * between the charge and the θ output never undercount. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cal/calibrate.h"
#include "cal/ledger.h"
#include "cal/matrix.h"
#include "core/dp_ledger.h"
#include "seeded_rng.h"
#include "test_support.h"

#define OCC GCDP_DATA_DIR "/occupancy/datatraining.txt"

/* n rows of 3 correlated nodes, one row per minute from t0 (ms). */
static struct cal_matrix *minutes(size_t n, int64_t t0)
{
    static const char *names[] = {"temperature", "humidity", "co2"};
    double *x = malloc(n * 3 * sizeof(double));
    int64_t *ts = malloc(n * sizeof(int64_t));
    struct cal_matrix *mx = NULL;
    for (size_t r = 0; r < n; r++) {
        double u = (double)r;
        x[3 * r] = 0.5 + 0.4 * sin(0.1 * u);
        x[3 * r + 1] = 0.5 + 0.3 * sin(0.1 * u + 0.3) + 0.05 * cos(1.7 * u);
        x[3 * r + 2] = 0.5 + 0.4 * cos(0.37 * u);
        ts[r] = t0 + (int64_t)r * 60000;
    }
    cr_assert_eq(cal_matrix_from_arrays(n, 3, x, names, NULL, 0, &mx), CORE_OK);
    cal_matrix_set_ts(mx, ts);
    free(x);
    free(ts);
    return mx;
}

static void private_opts(struct cal_opts *o, uint64_t version)
{
    cal_opts_default(o);
    o->mode = CAL_MODE_PRIVATE;
    o->eps.G = 1.0;
    o->eps.xi = 0.5;
    o->version = version;
}

static const char *const DEV1[] = {"dev1"};

static struct cal_ledger_opts lopts(double cap_eps)
{
    struct cal_ledger_opts lo = {DEV1, 1, 60000, 0, {cap_eps, 0.0, 1e-5}, 0};
    return lo;
}

static struct core_dp_ledger *open_ledger(const char *path, double cap_eps)
{
    struct core_dp_ledger_opts o = {path, {cap_eps, 0.0, 1e-5}, 0, {60000, 0, 60000}};
    struct core_dp_ledger *l = NULL;
    char eb[256] = "";
    cr_assert_eq(core_dp_ledger_open(&o, &l, eb, sizeof(eb)), CORE_OK, "%s", eb);
    return l;
}

static double spent(const struct core_dp_ledger *l, const char *unit)
{
    struct core_dp_cost c;
    cr_assert_eq(core_dp_ledger_spent(l, unit, &c), CORE_OK);
    return c.eps;
}

Test(cal_ledger, loaders_read_row_timestamps)
{
    char *dir = ts_tmpdir(), p[512], eb[512] = "";
    struct cal_matrix *mx = NULL;
    cr_assert_eq(
        cal_matrix_load_ts(OCC, CAL_FORMAT_OCCUPANCY, NULL, NULL, 100000, &mx, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_not_null(mx->ts, "occupancy: the date column");
    cr_assert_eq(mx->ts[0], 1423072260000, "2015-02-04 17:51:00 UTC");
    cr_assert_eq(mx->ts[1], 1423072319000, "2015-02-04 17:51:59 UTC");
    cr_assert_eq(mx->m, 5, "date is not a node");
    cal_matrix_free(mx);
    mx = NULL;
    snprintf(p, sizeof(p), "%s/m.csv", dir);
    ts_write_file(p, "a,ts,b\n1,0,2\n3,2015-02-04 17:51:00,4\n5,120000,6\n");
    cr_assert_eq(cal_matrix_load_ts(p, CAL_FORMAT_CSV, NULL, "ts", 100, &mx, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_eq(mx->m, 2, "the timestamp column is not a node");
    cr_assert_str_eq(mx->names[1], "b");
    cr_assert_eq(mx->x[1], 2.0);
    cr_assert_eq(mx->ts[1], 1423072260000);
    cr_assert_eq(mx->ts[2], 120000);
    cal_matrix_free(mx);
    mx = NULL;
    cr_assert_eq(cal_matrix_load(p, CAL_FORMAT_CSV, NULL, 100, &mx, eb, sizeof(eb)), CORE_EPARSE,
                 "without a timestamp column the date cell is not a number");
    ts_write_file(p, "a,ts,b\n1,0,2\n3,yesterday,4\n");
    cr_assert_eq(cal_matrix_load_ts(p, CAL_FORMAT_CSV, NULL, "ts", 100, &mx, eb, sizeof(eb)),
                 CORE_EPARSE);
    cr_assert(strstr(eb, "line 3") && strstr(eb, "\"ts\"") && strstr(eb, "timestamp"), "%s", eb);
    ts_rmtree(dir);
    free(dir);
}

/* Hand-computed: slot = floor(t / 60000); widen w adds the slots of [t − w, t + w]. */
Test(cal_ledger, units_are_release_units_of_the_rows)
{
    static const char *names[] = {"a"};
    static const char *const devs[] = {"d1", "d2"};
    const double x[5] = {0, 1, 2, 3, 4};
    const int64_t ts[5] = {0, 59999, 60000, 180000, -1};
    struct cal_matrix *mx = NULL;
    struct cal_units *u = NULL;
    struct cal_ledger_opts lo = {devs, 2, 60000, 0, {10, 0, 1e-5}, 0};
    char eb[512] = "";
    static const char *want[] = {"d1|-1", "d1|0", "d1|1", "d1|3", "d2|-1", "d2|0", "d2|1", "d2|3"};
    cr_assert_eq(cal_matrix_from_arrays(5, 1, x, names, NULL, 0, &mx), CORE_OK);
    cr_assert_eq(cal_ledger_units(mx, &lo, &u, eb, sizeof(eb)), CORE_EINVAL, "no timestamps");
    cr_assert(strstr(eb, "timestamp"), "%s", eb);
    cal_matrix_set_ts(mx, ts);
    cr_assert_eq(cal_ledger_units(mx, &lo, &u, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(u->n, 8);
    for (size_t i = 0; i < 8; i++)
        cr_assert_str_eq(u->names[i], want[i]);
    cal_units_free(u);
    lo.n_devices = 1;
    lo.widen_ms = 60000; /* time radius 1 x 60 s period */
    cr_assert_eq(cal_ledger_units(mx, &lo, &u, eb, sizeof(eb)), CORE_OK, "%s", eb);
    cr_assert_eq(u->n, 7, "rows widened by one minute cover the slots -2..4");
    cr_assert_str_eq(u->names[0], "d1|-2");
    cr_assert_str_eq(u->names[6], "d1|4");
    cal_units_free(u);
    lo.n_devices = 0;
    cr_assert_eq(cal_ledger_units(mx, &lo, &u, eb, sizeof(eb)), CORE_EINVAL);
    cr_assert(strstr(eb, "--device"), "%s", eb);
    lo.n_devices = 1;
    lo.slot_ms = 1;
    lo.widen_ms = 10000;
    cr_assert_eq(cal_ledger_units(mx, &lo, &u, eb, sizeof(eb)), CORE_ETOOBIG, "span cap");
    cal_matrix_free(mx);
}

/* A cap of 0 refuses before anything is drawn: no bytes taken from the noise source, no
 * reservation, no ledger row, no θ. */
Test(cal_ledger, charge_comes_before_noise)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(40, 0);
    struct core_dp_ledger *l;
    struct ts_rng *rng = ts_rng_seeded_new(1);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(0.0);
    struct cal_charged res;
    struct core_dp_ledger_stats st;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 0.0);
    private_opts(&o, 3);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_EBUDGET, "%s", eb);
    cr_assert_null(res.bytes, "no theta");
    cr_assert_eq(ts_rng_served(rng), 0, "no noise drawn before the charge");
    cr_assert(strstr(eb, "unit 'dev1|0'") && strstr(eb, "eps_cal=1.5") && strstr(eb, "cap eps=0"),
              "%s", eb);
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.releases, 0);
    cr_assert_eq(spent(l, "dev1|0"), 0.0);
    core_dp_ledger_free(l);

    /* the caps are bound in the ledger's header: another cap is refused on the same file */
    {
        struct core_dp_ledger_opts o2 = {path, {10.0, 0.0, 1e-5}, 0, {60000, 0, 60000}};
        cr_assert_eq(core_dp_ledger_open(&o2, &l, eb, sizeof(eb)), CORE_ESTATE);
        cr_assert(strstr(eb, "cap eps"), "%s", eb);
    }
    /* the same run with room for it (a new ledger): charged, then noise drawn, committed */
    snprintf(path, sizeof(path), "%s/ledger2.jsonl", dir);
    l = open_ledger(path, 10.0);
    lo = lopts(10.0);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, "csv:x", ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert(ts_rng_served(rng) > 0, "private mode draws noise");
    cr_assert_eq(res.n_units, 40);
    cr_assert_eq(res.n_parts, 1);
    cr_assert_eq(res.eps_charged, 1.5);
    cr_assert_not(res.replayed);
    for (int s = 0; s < 40; s++) {
        char unit[32];
        snprintf(unit, sizeof(unit), "dev1|%d", s);
        cr_assert_eq(spent(l, unit), 1.5, "%s", unit);
    }
    cr_assert_eq(spent(l, "dev1|40"), 0.0, "outside the calibration span");
    {
        uint8_t *b = NULL;
        size_t n = 0;
        cr_assert_eq(core_dp_ledger_lookup(l, "calibrate|3", &b, &n), CORE_OK);
        cr_assert_eq(n, res.len);
        cr_assert(memcmp(b, res.bytes, n) == 0, "the ledger holds the theta bytes");
        free(b);
    }
    cr_assert(strstr(res.bytes, "\"source\": \"csv:x\""), "source recorded");
    cal_charged_cleanup(&res);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

Test(cal_ledger, cap_refusal_names_the_unit_and_charges_nothing)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(10, 0);
    struct core_dp_ledger *l;
    struct ts_rng *rng = ts_rng_seeded_new(2);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(2.0);
    struct cal_charged res;
    const char *u7[] = {"dev1|7"};
    struct core_dp_cost one = {1.0, 0.0, 0.0};

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 2.0);
    /* a release already spent 1 on minute 7 */
    cr_assert_eq(core_dp_ledger_charge(l, "w7@1", "lap", u7, 1, &one, NULL), CORE_OK);
    cr_assert_eq(core_dp_ledger_commit_output(l, "w7@1", "x", 1), CORE_OK);
    private_opts(&o, 4);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_EBUDGET);
    cr_assert(strstr(eb, "unit 'dev1|7' has spent eps=1 ") && strstr(eb, "eps_cal=1.5") &&
                  strstr(eb, "cap eps=2") && strstr(eb, "no theta written"),
              "%s", eb);
    cr_assert_eq(ts_rng_served(rng), 0);
    cr_assert_eq(spent(l, "dev1|0"), 0.0, "refused whole: no other unit charged");
    cr_assert_eq(spent(l, "dev1|7"), 1.0);
    /* eps_cal 0.5 + 0.5 = 1 fits: 1 + 1 <= 2 */
    o.eps.G = 0.5;
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_eq(spent(l, "dev1|7"), 2.0, "composition: eps_rel + eps_cal on the same unit");
    cr_assert_eq(spent(l, "dev1|0"), 1.0);
    cal_charged_cleanup(&res);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

Test(cal_ledger, same_version_replays_without_a_second_charge)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(30, 600000), *mx2 = minutes(31, 600000);
    struct core_dp_ledger *l;
    struct ts_rng *rng = ts_rng_seeded_new(3);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged a, b;
    uint64_t served;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 10.0);
    private_opts(&o, 11);
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &a, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    core_dp_ledger_free(l);
    l = open_ledger(path, 10.0); /* a new process: totals rebuilt from the file */
    served = ts_rng_served(rng);
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &b, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert(b.replayed);
    cr_assert_not(b.replayed_other);
    cr_assert_eq(b.len, a.len);
    cr_assert(memcmp(a.bytes, b.bytes, a.len) == 0, "byte-identical replay");
    cr_assert_eq(ts_rng_served(rng), served, "no noise on replay");
    cr_assert_eq(spent(l, "dev1|10"), 1.5, "charged once");
    cal_charged_cleanup(&b);
    /* another input under the same version: the stored θ, flagged */
    cr_assert_eq(
        cal_calibrate_charged(l, mx2, &o, &lo, NULL, ts_rng_iface(rng), &b, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert(b.replayed && b.replayed_other);
    cr_assert_eq(spent(l, "dev1|40"), 0.0, "the extra row is not calibrated, not charged");
    cr_assert_eq(spent(l, "dev1|10"), 1.5);
    cal_charged_cleanup(&b);
    /* a new version is a new calibration: charged again */
    o.version = 12;
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &b, eb, sizeof(eb)),
                 CORE_OK, "%s", eb);
    cr_assert_not(b.replayed);
    cr_assert_eq(spent(l, "dev1|10"), 3.0);
    cal_charged_cleanup(&a);
    cal_charged_cleanup(&b);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    cal_matrix_free(mx2);
    ts_rmtree(dir);
    free(dir);
}

/* More than CORE_DP_LEDGER_MAX_UNITS units: several rows, one group commit, head last. */
Test(cal_ledger, many_units_are_charged_in_several_rows)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "", *text, *line;
    struct cal_matrix *mx = minutes(9000, 0);
    struct core_dp_ledger *l;
    struct ts_rng *rng = ts_rng_seeded_new(4);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged res;
    struct core_dp_ledger_stats st;
    FILE *f;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 10.0);
    core_dp_ledger_stats(l, &st);
    uint64_t fsyncs0 = st.fsyncs;
    private_opts(&o, 21);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_eq(res.n_units, 9000);
    cr_assert_eq(res.n_parts, 3, "ceil(9000 / 4096)");
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.fsyncs, fsyncs0 + 1, "one group commit");
    cr_assert_eq(st.releases, 3);
    core_dp_ledger_free(l);
    cal_charged_cleanup(&res);
    l = open_ledger(path, 10.0);
    cr_assert_eq(spent(l, "dev1|0"), 1.5);
    cr_assert_eq(spent(l, "dev1|4096"), 1.5);
    cr_assert_eq(spent(l, "dev1|8999"), 1.5);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert(res.replayed);
    cal_charged_cleanup(&res);
    core_dp_ledger_free(l);
    /* head last in the file; drop part 2 (keep 1 and the head): the replay must refuse */
    text = ts_read_file(path, NULL);
    cr_assert(strstr(text, "\"calibrate|21#1\"") < strstr(text, "\"calibrate|21#2\"") &&
              strstr(text, "\"calibrate|21#2\"") < strstr(text, "\"calibrate|21\""));
    f = fopen(path, "w");
    for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(line, "\"calibrate|21#2\""))
            fprintf(f, "%s\n", line);
    fclose(f);
    free(text);
    l = open_ledger(path, 10.0);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_EINVARIANT);
    cr_assert(strstr(eb, "part rows are missing"), "%s", eb);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

/* A noise source that kills the process: a crash after the charge, before the commit. */
static core_err die_fill(void *self, uint8_t *buf, size_t len)
{
    (void)self;
    (void)buf;
    (void)len;
    raise(SIGKILL);
    return CORE_ERNG;
}

static int child_status(pid_t pid)
{
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

Test(cal_ledger, crash_during_noise_leaves_nothing_published_and_rerun_charges_once)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(20, 0);
    struct ts_rng *rng = ts_rng_seeded_new(5);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged res;
    struct core_dp_ledger *l;
    uint8_t *b = NULL;
    size_t n = 0;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    private_opts(&o, 31);
    fflush(NULL);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct core_rng die = {die_fill, NULL};
        l = open_ledger(path, 10.0);
        if (cal_calibrate_charged(l, mx, &o, &lo, NULL, &die, &res, eb, sizeof(eb)) != CORE_OK)
            _exit(2);
        _exit(3); /* not reached: the first draw kills the child */
    }
    cr_assert_eq(child_status(pid), SIGKILL);
    l = open_ledger(path, 10.0);
    cr_assert_eq(core_dp_ledger_lookup(l, "calibrate|31", &b, &n), CORE_ENOTFOUND,
                 "nothing committed, so nothing could have been published");
    cr_assert_eq(spent(l, "dev1|0"), 0.0);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert_not(res.replayed);
    cr_assert_eq(spent(l, "dev1|0"), 1.5, "the rerun charges once");
    cal_charged_cleanup(&res);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

Test(cal_ledger, crash_after_commit_before_theta_write_never_undercounts)
{
    char *dir = ts_tmpdir(), path[512], bpath[512], eb[1024] = "", *child_bytes;
    struct cal_matrix *mx = minutes(20, 0);
    struct ts_rng *rng = ts_rng_seeded_new(6);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged res;
    struct core_dp_ledger *l;
    size_t n = 0;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    snprintf(bpath, sizeof(bpath), "%s/child.bytes", dir);
    private_opts(&o, 41);
    fflush(NULL);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct ts_rng *crng = ts_rng_seeded_new(7);
        l = open_ledger(path, 10.0);
        if (cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(crng), &res, eb, sizeof(eb)) !=
            CORE_OK)
            _exit(4);
        FILE *f = fopen(bpath, "w"); /* what the child had, for the comparison */
        fwrite(res.bytes, 1, res.len, f);
        fclose(f);
        raise(SIGKILL); /* before the θ file is written or published */
        _exit(5);
    }
    cr_assert_eq(child_status(pid), SIGKILL);
    child_bytes = ts_read_file(bpath, &n);
    cr_assert_not_null(child_bytes);
    l = open_ledger(path, 10.0);
    for (int s = 0; s < 20; s++) {
        char unit[32];
        snprintf(unit, sizeof(unit), "dev1|%d", s);
        cr_assert_eq(spent(l, unit), 1.5, "committed charge survives the crash: %s", unit);
    }
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK, "%s", eb);
    cr_assert(res.replayed, "the rerun republishes the committed theta");
    cr_assert_eq(res.len, n);
    cr_assert(memcmp(res.bytes, child_bytes, n) == 0, "byte-identical to the child's theta");
    cr_assert_eq(ts_rng_served(rng), 0, "no new noise");
    cr_assert_eq(spent(l, "dev1|0"), 1.5, "charged exactly once");
    cal_charged_cleanup(&res);
    free(child_bytes);
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

Test(cal_ledger, configuration_is_checked_before_the_charge)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(10, 0);
    struct core_dp_ledger *l;
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged res;
    struct core_dp_ledger_stats st;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 10.0);
    private_opts(&o, 51);
    o.eps.xi = 0.0;
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, core_rng_os(), &res, eb, sizeof(eb)),
                 CORE_ECONFIG);
    cr_assert(strstr(eb, "calibrate.eps_xi"), "%s", eb);
    o.eps.xi = NAN;
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, core_rng_os(), &res, eb, sizeof(eb)),
                 CORE_ECONFIG, "NaN fails closed");
    o.eps.xi = 0.5;
    o.mode = CAL_MODE_PUBLIC;
    o.eps = (struct cal_eps_cal){0, 0, 0, 0};
    cr_assert_eq(cal_calibrate_charged(l, mx, &o, &lo, NULL, core_rng_os(), &res, eb, sizeof(eb)),
                 CORE_EINVAL, "public mode charges nothing: not this function's job");
    core_dp_ledger_stats(l, &st);
    cr_assert_eq(st.releases + st.pending, 0);
    core_dp_ledger_free(l);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}

/* Once noise may have been drawn, the charge stands: a calibration that fails after its
 * noise (here the random source fails part-way) keeps eps_cal on every unit, durably, and
 * its version can never be replayed as a theta. */
Test(cal_ledger, failure_after_noise_keeps_the_charge)
{
    char *dir = ts_tmpdir(), path[512], eb[1024] = "";
    struct cal_matrix *mx = minutes(40, 0);
    struct ts_rng *rng = ts_rng_failing_new(3, 64);
    struct cal_opts o;
    struct cal_ledger_opts lo = lopts(10.0);
    struct cal_charged res;
    struct core_dp_ledger *l;

    snprintf(path, sizeof(path), "%s/ledger.jsonl", dir);
    l = open_ledger(path, 10.0);
    private_opts(&o, 3);
    cr_assert_eq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_ERNG, "%s", eb);
    cr_assert(ts_rng_served(rng) > 0, "noise was being drawn");
    cr_assert_null(res.bytes, "no theta");
    cr_assert(strstr(eb, "charge of calibrate|3 stands"), "%s", eb);
    core_dp_ledger_free(l);
    l = open_ledger(path, 10.0); /* durable: rebuilt from the file */
    cr_assert_eq(spent(l, "dev1|0"), 1.5);
    cr_assert_eq(spent(l, "dev1|39"), 1.5);
    ts_rng_free(rng);
    rng = ts_rng_seeded_new(4);
    cr_assert_neq(
        cal_calibrate_charged(l, mx, &o, &lo, NULL, ts_rng_iface(rng), &res, eb, sizeof(eb)),
        CORE_OK);
    cr_assert(strstr(eb, "failed after its noise was drawn"), "%s", eb);
    cr_assert_eq(spent(l, "dev1|0"), 1.5, "the refused replay charges nothing more");
    core_dp_ledger_free(l);
    ts_rng_free(rng);
    cal_matrix_free(mx);
    ts_rmtree(dir);
    free(dir);
}
