set terminal pngcairo size 1500,420 noenhanced
set output 'bench/results/issue9-dp-Sandybridge/fig3.png'
set multiplot layout 1,3
set xlabel 'epsilon'
set key top right
set grid
set logscale x
set title 'SHD'
plot 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:2:3 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:8:9 with yerrorlines title 'Fed-Sparse-BNSL (non-private)'
set title 'TPR'
plot 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:4:5 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:10:11 with yerrorlines title 'Fed-Sparse-BNSL (non-private)'
set title 'FDR'
plot 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:6:7 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/issue9-dp-Sandybridge/fig3.dat' using 1:12:13 with yerrorlines title 'Fed-Sparse-BNSL (non-private)'
unset multiplot
