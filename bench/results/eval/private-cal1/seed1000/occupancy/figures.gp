# gnuplot figures.gp (run in this folder) -- made by gcdp eval
set terminal pngcairo size 800,560 noenhanced
set key outside right
set grid
set logscale x 2
set xlabel 'epsilon_rel'
set output 'fig2_f1_vs_eps.png'
set ylabel 'task F1 (%)'
set title 'occupancy: task F1 vs release budget (mean +- sd over draws; cf. gc-dp Fig. 2)'
plot for [m=0:4] 'fig_eps.dat' using 1:(column(2+4*m)):(column(3+4*m)) with yerrorlines title word('Lap-DP Gau-DP Ada-DP Risk-DP GC-DP', m+1)
set output 'fig4_auc_vs_eps.png'
set ylabel 'oriented attack AUC'
set title 'occupancy: attack AUC vs release budget (cf. gc-dp Fig. 4)'
plot for [m=0:4] 'fig_eps.dat' using 1:(column(4+4*m)):(column(5+4*m)) with yerrorlines title word('Lap-DP Gau-DP Ada-DP Risk-DP GC-DP', m+1)
unset logscale x
set xlabel 'tau'
set output 'fig5_tau.png'
set ylabel 'F1 (%)'
set y2label 'oriented attack AUC'
set ytics nomirror
set y2tics
set title 'occupancy: GC-DP at eps = 1 vs tau (cf. gc-dp Fig. 5)'
plot 'fig_tau.dat' using 1:2:3 with yerrorlines title 'test F1', 'fig_tau.dat' using 1:6 with linespoints title 'validation F1 (selection)', 'fig_tau.dat' using 1:4:5 axes x1y2 with yerrorlines title 'attack AUC'
unset y2tics
unset y2label
set ytics mirror
set output 'fig6_pareto.png'
set xlabel 'oriented attack AUC'
set ylabel 'task F1 (%)'
set title 'occupancy: F1 vs attack AUC at eps = 1 (cf. gc-dp Fig. 6)'
plot 'fig_pareto.dat' using 3:2 with points pt 7 notitle, '' using 3:2:1 with labels offset 1,0.6 left notitle
