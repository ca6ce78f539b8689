# gnuplot figure7.gp (run in this folder) -- made by gcdp eval --figure7
set terminal pngcairo size 800,560 noenhanced
set key bottom right
set grid
set xlabel 'number of nodes M'
set ylabel 'runtime of one calibration-and-release pass (ms)'
set title 'Runtime vs M at eps = 1, synthetic windows (median, bars: fastest-slowest; cf. gc-dp Fig. 7)'
stats 'figure7.dat' using 1:11 nooutput
mmax = STATS_max_x
mmin = STATS_min_x
stats 'figure7.dat' using 1:($1 == mmax ? $11 : 0) nooutput
gmax = STATS_max_y
set logscale xy
set xrange [mmin / 1.25 : mmax * 1.25]
set output 'fig7_runtime_vs_m.png'
plot for [v=0:4] 'figure7.dat' using 1:(column(2+3*v)):(column(3+3*v)):(column(4+3*v)) with yerrorlines title word('Lap-DP Ada-DP Risk-DP GC-DP GC-DP-Cache', v+1), gmax * (x / mmax)**2 with lines dt 2 lc rgb 'gray' title 'slope 2 (M^2) through GC-DP at the largest M'
