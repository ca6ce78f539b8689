set terminal pngcairo size 1500,420 noenhanced
set output 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.png'
set multiplot layout 1,3
set xlabel 'd'
set key top right
set grid
set title 'SHD'
plot 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:2:3 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:8:9 with yerrorlines title 'DP-Fed-BNSL'
set title 'TPR'
plot 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:4:5 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:10:11 with yerrorlines title 'DP-Fed-BNSL'
set title 'FDR'
plot 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:6:7 with yerrorlines title 'DP-Fed-Sparse-BNSL', 'bench/results/d200-bsparsify/fig4-clip10-d100-200/fig4.dat' using 1:12:13 with yerrorlines title 'DP-Fed-BNSL'
unset multiplot
